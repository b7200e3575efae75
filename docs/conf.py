"""The course as a website: `make book` builds it into build/book/html (`make book-check` tests it).

Why Sphinx with MyST-NB and sphinx-book-theme: MyST-NB renders the notebooks with their committed
outputs (figures, embedded videos) without running them; all of it installs from PyPI (the `book`
extra) and builds offline, into a static site with a search. Jupyter Book 1 is this same stack
behind its own config files and older pins, so plain Sphinx is one layer less; Jupyter Book 2
(mystmd) needs Node and downloads its theme at build time, which this course's CI cannot do.

`make book` copies the site's sources into build/book-src at their repository paths (README.md,
notebooks/, docs/; docs/index.md, the start page, to the top) and builds them with this file
(`sphinx-build -c docs`), so that every page sits at its repository path: the links between them
work as on GitHub, and so do the Colab buttons. (A symlink docs/notebooks would not do: Sphinx
resolves it, and the links out of the pages would leave the source folder.) Nothing loads from
another host: MathJax comes from sphinx-mathjax-offline; _ext/course_book.py replaces the widgets
(their JavaScript would come from a CDN) and serves the Colab badge locally.
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(Path(__file__).parent / "_ext")]

from a3c_course.lessons.colab import COURSE_REF, COURSE_REPOSITORY  # noqa: E402  (no torch)

project = "A3C, built by hand"
author = "The A3C course's authors"
copyright = "the A3C course's authors, MIT licence"

extensions = [
    "myst_nb",  # notebooks and Markdown (MyST), with MyST-Parser
    "sphinx-mathjax-offline",  # MathJax 3 served from _static/, not a CDN
    "course_book",  # _ext/course_book.py: widgets, the run note, local badge, repository links
]
# README.md is index.md's content; docs/ holds this folder and the README's GIFs.
exclude_patterns = ["README.md", "docs", "**.ipynb_checkpoints"]
# Unit 2 and the appendix go from a "#" title straight to "###" headings (a goal box, the blocks
# of the original code): the notebooks' choice, shown as written.
suppress_warnings = ["myst.header"]

# The committed outputs are the content: never execute (the notebooks take minutes to hours).
nb_execution_mode = "off"
# Widgets need a kernel, and ipywidgets' JavaScript would come from a CDN: none is loaded;
# course_book.read_notebook puts a note (and the figures a widget held) in their place.
nb_ipywidgets_js = {}
nb_custom_formats = {".ipynb": ["course_book.read_notebook", {}, False]}
nb_merge_streams = True  # one block for a cell's printed lines, as Jupyter shows them

myst_enable_extensions = [
    "dollarmath",  # $...$ and $$...$$, as in Jupyter
    "amsmath",
    "html_image",  # the README's <img> tags become images that Sphinx copies
]
myst_heading_anchors = 3  # links such as index.md#quick-start

html_theme = "sphinx_book_theme"
html_title = project
html_static_path = ["_static"]
html_favicon = "_static/favicon.svg"  # else the browser asks for /favicon.ico, and gets a 404
html_context = {"default_mode": "light"}  # the figures are drawn on white (the reader may switch)
html_theme_options = {
    "repository_url": COURSE_REPOSITORY,
    "repository_branch": COURSE_REF,
    "path_to_docs": "",  # each page sits at its repository path (build/book-src, above)
    "use_repository_button": True,
    "use_download_button": True,  # the page's .ipynb: the learner's edition
    "launch_buttons": {"colab_url": "https://colab.research.google.com"},
    "home_page_in_toc": True,
    "show_navbar_depth": 1,
}
