# Every target sets itself up: it creates .venv when missing and installs the course into it.
# torch is pinned on purpose (an unpinned torch pulls a multi-GB CUDA build); override with
#   make test TORCH_SPEC="torch==2.5.1"
PYTHON     ?= python3
TORCH_SPEC ?= torch==2.13.0
VENV       := .venv
BIN        := $(VENV)/bin
STAMP      := $(VENV)/.installed

.PHONY: setup lab test quick lint unit notebooks train instructor doctor clean colab-check book book-check

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --no-warn-script-location "$(TORCH_SPEC)"
	$(BIN)/pip install --quiet --no-warn-script-location -e ".[dev,lab,cluster,book]"
	touch $(STAMP)

# JupyterLab refuses to run as root unless told to (containers, cloud machines).
lab: $(STAMP)
	$(BIN)/jupyter lab notebooks/ $(if $(filter 0,$(shell id -u)),--allow-root)

# ruff, then import-linter: the layers' import contracts ([tool.importlinter] in pyproject.toml).
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/lint-imports

unit: $(STAMP)
	$(BIN)/pytest tests

# The quick loop while editing: the unit tests without the slow ones (learning runs, notebooks,
# the browser, Ray clusters; @pytest.mark.slow), in two workers. `make test` runs everything.
quick: $(STAMP)
	$(BIN)/pytest -m "not slow" -n 2 -q tests

notebooks: $(STAMP)
	$(BIN)/pytest --nbval notebooks

# Everything CI checks: lint, unit tests and every notebook (strict nbval), in two pytest workers
# (pytest-xdist): most tests use one core at a time. --dist loadscope keeps each test file, and
# each notebook's cells in order, in one worker.
test: lint $(STAMP)
	$(BIN)/pytest --nbval -n 2 --dist loadscope --durations=15

# Colab's stack (tools/colab_stack.py: ipywidgets 7.7.1, IPython 7.34, numpy 2.0.2, matplotlib
# 3.10.0, no JupyterLab) in .venv-colab; the course installed from git as the notebooks' setup cell
# installs it (the committed HEAD: commit first), then Ray as Unit 5's second setup cell adds it;
# after each, a check that the install kept Colab's versions;
# then the widget tests, against the installed course, and every notebook run in fast mode.
COLAB_VENV := .venv-colab
colab-check:
	rm -rf $(COLAB_VENV) && $(PYTHON) -m venv $(COLAB_VENV)
	$(COLAB_VENV)/bin/pip install --quiet --upgrade pip  # Colab's pip is recent
	$(PYTHON) tools/colab_stack.py pins > $(COLAB_VENV)/colab-pins.txt
	$(COLAB_VENV)/bin/pip install --quiet --no-warn-script-location "$(TORCH_SPEC)" -r $(COLAB_VENV)/colab-pins.txt
	$(COLAB_VENV)/bin/pip install --quiet --no-warn-script-location "a3c-course @ git+file://$(CURDIR)"
	$(COLAB_VENV)/bin/python tools/colab_stack.py verify
	$(COLAB_VENV)/bin/pip install --quiet --no-warn-script-location "a3c-course[cluster] @ git+file://$(CURDIR)"
	$(COLAB_VENV)/bin/python tools/colab_stack.py verify
	$(COLAB_VENV)/bin/pip install --quiet --no-warn-script-location -c $(COLAB_VENV)/colab-pins.txt \
		pytest nbval pytest-timeout psutil nbformat
	$(COLAB_VENV)/bin/python tools/colab_stack.py verify
	$(COLAB_VENV)/bin/pytest --import-mode=importlib -p no:warnings tests/test_widgets.py tests/test_colab.py
	$(COLAB_VENV)/bin/pytest -p no:warnings --nbval-lax notebooks

# The course as a website (docs/conf.py says how and why) in build/book/html: the README, every
# unit with its saved outputs (nothing runs) and the glossary; open build/book/html/index.html.
# Its sources are copied into build/book-src at their repository paths, docs/index.md on top.
# book-check: then no exercise's solution on it, and in chromium every page, image, video, link
# and the search work (tests/book/, which `make test` leaves out).
BOOK_SRC := build/book-src
book: $(STAMP)
	rm -rf $(BOOK_SRC) build/book && mkdir -p $(BOOK_SRC)
	cp -R README.md notebooks docs $(BOOK_SRC)/ && cp docs/index.md $(BOOK_SRC)/
	$(BIN)/sphinx-build -W --keep-going -q -c docs -d build/book/doctrees $(BOOK_SRC) build/book/html

book-check: book
	$(BIN)/pytest tests/book

# Train an agent on Pong for 20 minutes with two workers (8 environments each), then score the
# network's snapshots (one a minute) on both cores; the run lands in runs/pong.
train: $(STAMP)
	$(BIN)/a3c-course train --game pong --minutes 20 --eval-mode after --out runs/pong

# The instructor edition of the notebooks (every exercise's solution filled in) in instructor/.
instructor: $(STAMP)
	$(BIN)/a3c-course exercises instructor --out instructor

doctor: $(STAMP)
	$(BIN)/a3c-course doctor

# What the targets, pip and the tools leave behind; runs/ (your trained agents) stays.
clean:
	rm -rf $(VENV) $(COLAB_VENV) build dist *.egg-info instructor tests/artifacts
	rm -rf .pytest_cache .hypothesis .ruff_cache .import_linter_cache
	find . -path ./.git -prune -o -type d -name __pycache__ -prune -exec rm -rf {} +
	find . -path ./.git -prune -o -type d -name .ipynb_checkpoints -prune -exec rm -rf {} +
