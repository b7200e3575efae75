"""The one setup cell every notebook opens with.

In Google Colab it installs the course from its repository and turns on Colab's widget manager.
The package's dependency ranges accept what Colab already has (its torch, numpy, matplotlib, and
ipywidgets 7.7.1), so pip adds the missing packages and upgrades nothing that the session has
loaded: no runtime restart. Should pip ever replace a package already loaded, the cell says so in
words (restart_needed). Anywhere else it does nothing and prints nothing, so nbval and JupyterLab see
no output. `make colab-check` installs the course the same way into Colab's versions and runs every
notebook. Unit 5's notebook has a second such cell (CLUSTER_CELL) that adds Ray.

The repository and the branch or tag it installs (and the Colab badges open) are set here, in
COURSE_REPOSITORY and COURSE_REF. A fork changes COURSE_REPOSITORY; a course pinned to a release sets
COURSE_REF to its tag (say "v0.1.0"); then `python tools/sync_colab.py` (an author's tool, in the
repository, not in this package) rewrites the cells and the badges (notebooks and README), and
tests/test_colab.py checks that they all match.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

COURSE_REPOSITORY = "https://github.com/a3c-course/a3c-course"
COURSE_REF = "main"  # the branch or tag that learners get: a release's tag pins it
INSTALL_SPEC = f"a3c-course @ git+{COURSE_REPOSITORY}@{COURSE_REF}"
GITHUB_PATH = COURSE_REPOSITORY.removeprefix("https://github.com/")  # where the badges point
# Packages a Colab session has loaded before the setup cell runs (distribution: module); if pip
# replaced one of them, the running kernel would hold the old version and mix it with the new.
PRELOADED = {"numpy": "numpy", "torch": "torch", "matplotlib": "matplotlib",
             "ipywidgets": "ipywidgets", "traitlets": "traitlets"}  # fmt: skip

SETUP_CELL = f"""\
# Setup: in Google Colab this installs the course (about a minute); elsewhere it does nothing.
import sys

if "google.colab" in sys.modules:
    from google.colab import output

    output.enable_custom_widget_manager()  # renders ipywidgets 7 (Colab's) and 8 alike
    %pip install --quiet "{INSTALL_SPEC}"
    from a3c_course.lessons.colab import restart_needed

    restart_needed()  # prints what to do in the rare case that pip replaced a loaded package"""

# Unit 5's second cell: Ray, the course's optional "cluster" extra, which Colab does not ship.
CLUSTER_MARKER = "# Unit 5 needs Ray"
CLUSTER_CELL = f"""\
{CLUSTER_MARKER} (the course's "cluster" extra): in Colab this installs it; elsewhere it checks.
import importlib.util
import sys

if "google.colab" in sys.modules:
    %pip install --quiet "{INSTALL_SPEC.replace("a3c-course", "a3c-course[cluster]", 1)}"
    from a3c_course.lessons.colab import restart_needed

    restart_needed()
elif importlib.util.find_spec("ray") is None:
    print('Ray is missing: `pip install "a3c-course[cluster]"` (make setup installs it), then restart.')"""


# Google Drive, where a run outlives the Colab session (keep_run.py copies kept runs there).
DRIVE_ROOT = Path("/content/drive/MyDrive")  # there once Drive is mounted, absent before
DRIVE_MOUNT = "from google.colab import drive; drive.mount('/content/drive')"


def in_colab() -> bool:
    """Whether this kernel runs in Google Colab (as the setup cell tells: Colab loaded the module)."""
    return "google.colab" in sys.modules


def download(path: str | os.PathLike) -> None:
    """Have the browser download path (Colab only). Its JavaScript is displayed where display()
    writes: a panel calls this inside its Output widget, or a button's click would lose it."""
    from google.colab import files  # only in Colab: there is no such package elsewhere

    files.download(str(path))


def restart_needed() -> bool:
    """True, with what to do printed, when a package this session had loaded (PRELOADED) is now
    installed in another version: the kernel still runs the old one, so restart the session."""
    from importlib.metadata import PackageNotFoundError, version

    changed = []
    for distribution, module_name in PRELOADED.items():
        loaded = getattr(sys.modules.get(module_name), "__version__", None)
        try:
            installed = version(distribution)
        except PackageNotFoundError:
            continue
        if loaded is not None and loaded != installed:
            changed.append(f"{distribution} {loaded} -> {installed}")
    if changed:
        print(
            f"pip replaced packages this session had already loaded ({', '.join(changed)}). "
            "Restart the session (Runtime > Restart session), then run the notebook again from "
            "the top; this cell will then install nothing more."
        )
    return bool(changed)
