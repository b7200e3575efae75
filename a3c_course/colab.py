"""The one setup cell every notebook opens with.

In Google Colab it installs the course from its repository (keeping Colab's own torch, which the
package's loose ranges accept) and turns on Colab's widget manager, which ipywidgets 8 needs there.
Anywhere else it does nothing and prints nothing, so nbval and JupyterLab see no output.

A fork changes COURSE_REPOSITORY here and runs `python -m a3c_course.colab` to rewrite the cells;
tests/test_colab.py checks that every notebook's setup cell matches.
"""

from __future__ import annotations

COURSE_REPOSITORY = "https://github.com/a3c-course/a3c-course"

SETUP_CELL = f"""\
# Setup: in Google Colab this installs the course (about a minute); elsewhere it does nothing.
import sys

if "google.colab" in sys.modules:
    from google.colab import output

    output.enable_custom_widget_manager()  # ipywidgets 8 needs Colab's custom widget manager
    %pip install --quiet "a3c-course @ git+{COURSE_REPOSITORY}\""""
