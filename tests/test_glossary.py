"""No word before its definition: the glossary (notebooks/glossary.md) lists every term that a
"New words" box defines, in the course's reading order, and no term appears in a lesson's prose
before the cell that defines it. tools/glossary.py says what counts as a use."""

import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import glossary  # noqa: E402


def test_the_glossary_is_written_from_the_boxes():
    assert glossary.GLOSSARY.read_text() == glossary.render(), (
        "notebooks/glossary.md is out of date: run `python tools/glossary.py write`"
    )


def test_every_term_is_defined_before_its_first_use():
    assert glossary.early_uses() == []


def test_the_core_words_are_in_the_glossary():
    # The words every unit leans on; a box that loses one would leave it undefined.
    terms = {entry.term.lower() for entry in glossary.glossary()}
    for word in ["agent", "policy", "return", "value", "advantage", "rollout", "worker", "hogwild"]:
        assert word in terms


@pytest.fixture
def course(tmp_path, monkeypatch):
    """A two-notebook course in tmp_path; write(name, *markdown) adds a notebook."""
    monkeypatch.setattr(glossary, "NOTEBOOKS", tmp_path)

    def write(name, *sources):
        cells = [new_markdown_cell(s) for s in sources] + [new_code_cell("rollout = 1")]
        nbformat.write(new_notebook(cells=cells), tmp_path / name)

    return write


BOX = "> **New words.**\n> - *rollout*: the steps a worker plays before an update.\n"


def test_a_use_in_an_earlier_notebook_is_found(course):
    course("01_a.ipynb", "Each rollouts ends with an update.")
    course("02_b.ipynb", BOX)
    (problem,) = glossary.early_uses()
    assert "'rollout' defined in 02_b.ipynb cell 0, used first in 01_a.ipynb cell 0" in problem


def test_a_use_in_the_defining_cell_or_in_code_is_not_early(course):
    course("01_a.ipynb", "The `rollout` variable; $rollout$ in maths.", "A rollout.\n\n" + BOX)
    assert glossary.early_uses() == []
    assert glossary.glossary()[0].definition == ": the steps a worker plays before an update."


def test_plurals_and_hyphens_count_as_the_term(course):
    course("01_a.ipynb", "Two Rollouts.", BOX)
    course("02_b.ipynb", "Replay-buffers.", "> **New words.**\n> - *replay buffer*: old steps.\n")
    assert [problem.split()[0] for problem in glossary.early_uses()] == ["'rollout'", "'replay"]


def test_ordinary_phrases_are_not_uses(course, monkeypatch):
    monkeypatch.setitem(glossary.ORDINARY, "rollout", [r"rollout of the carpet"])
    course("01_a.ipynb", "The rollout of the carpet.", BOX)
    assert glossary.early_uses() == []


def test_a_core_use_needs_a_core_definition(course):
    # A learner may skip every optional section: a box there does not define a word for the core.
    course("01_a.ipynb", "## Summary", "## Optional: more\n\n" + BOX)
    course("02_b.ipynb", "Each rollout ends with an update.")
    (problem,) = glossary.early_uses()
    assert "'rollout' defined only in optional depth" in problem
    assert "used in the core path in 02_b.ipynb cell 0" in problem
    course("02_b.ipynb", "## Optional: later\n\nEach rollout ends with an update.")
    assert glossary.early_uses() == []
