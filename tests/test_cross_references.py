"""Every section a lesson names ("Unit 3's *Termination versus truncation*") exists in that unit:
sections move between the core and the optional depth, and their titles change."""

import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
# "Unit 2, *A real frame, standardised*", "Unit 3's optional section *The choice of ...*", ...
REFERENCE = re.compile(r"Unit (\d)(?:'s)?(?:,| \(| optional| section|\s)*\*([^*]+)\*")


def plain(text: str) -> str:
    return re.sub(r"^optional:\s*", "", " ".join(text.split()).lower())


def headings(unit: int) -> list[str]:
    (path,) = [p for p in NOTEBOOKS if p.name.startswith(f"0{unit}_")]
    cells = nbformat.read(path, as_version=4).cells
    return [
        plain(line.lstrip("#"))
        for cell in cells
        if cell.cell_type == "markdown"
        for line in cell.source.splitlines()
        if line.startswith("#")
    ]


def references() -> list[tuple[str, int, str]]:
    found = []
    for path in [*NOTEBOOKS, ROOT / "README.md"]:
        if path.suffix == ".ipynb":
            cells = nbformat.read(path, as_version=4).cells
            texts = [c.source for c in cells if c.cell_type == "markdown"]
        else:
            texts = [path.read_text()]
        for text in texts:
            found += [(path.name, int(m[1]), plain(m[2])) for m in REFERENCE.finditer(text)]
    return found


def test_lessons_name_sections_of_other_units():
    assert len(references()) >= 10  # the pattern still finds what the lessons write


@pytest.mark.parametrize("where, unit, section", references())
def test_a_named_section_exists(where, unit, section):
    titles = headings(unit)
    assert any(section in title for title in titles), (
        f"{where} names Unit {unit}'s *{section}*; its sections: {titles}"
    )
