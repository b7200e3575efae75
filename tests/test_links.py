"""Every link into a section of a Markdown page (README, the benchmarks' pages, the glossary, the
notebooks' text) lands on a heading that exists: a renamed section breaks the test, not the reader's
click. Anchors are GitHub's: the heading in lower case, punctuation dropped, spaces as hyphens."""

import functools
import json
import re
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\]\(([^)\s]+\.md|)#([^)\s]+)\)")


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading's text."""
    text = heading.strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


@functools.cache  # a page is read once, however many links point into it
def anchors(page: Path) -> frozenset[str]:
    """The anchors of a Markdown page's headings (outside code blocks), duplicates numbered."""
    found: list[str] = []
    times: Counter[str] = Counter()  # how often each name came before
    fenced = False
    for line in page.read_text().splitlines():
        fenced ^= line.startswith("```")
        if not fenced and re.match(r"#{1,6} ", line):
            name = anchor(line.lstrip("#"))
            found.append(f"{name}-{times[name]}" if times[name] else name)
            times[name] += 1
    return frozenset(found)


def markdown_texts() -> dict[Path, str]:
    """{the file a text is in: the text}; a notebook's markdown cells joined."""
    pages = [
        ROOT / "README.md",
        *(ROOT / "benchmarks").glob("*.md"),
        *(ROOT / "notebooks").glob("*.md"),
    ]
    texts = {page: page.read_text() for page in pages}
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = json.loads(notebook.read_text())["cells"]
        texts[notebook] = "\n".join(
            "".join(c["source"]) for c in cells if c["cell_type"] == "markdown"
        )
    return texts


def section_links() -> list[tuple[Path, str, str]]:
    """(the file, the linked page or "" for the same one, the anchor) of every link to a section."""
    return [
        (source, *link) for source, text in markdown_texts().items() for link in LINK.findall(text)
    ]


def broken_links() -> list[str]:
    broken = []
    for source, target, fragment in section_links():
        page = source if not target else (source.parent / target).resolve()
        if page.suffix == ".md" and (not page.is_file() or fragment not in anchors(page)):
            broken.append(f"{source.relative_to(ROOT)}: {target}#{fragment}")
    return broken


def test_every_link_to_a_section_finds_its_heading():
    assert len(section_links()) >= 10  # the pattern still finds what the pages write
    assert broken_links() == []


@pytest.mark.parametrize(
    ("heading", "expected"),
    [
        ("Pong: the defaults' reference runs, five independent seeds, 2026-12-07",
         "pong-the-defaults-reference-runs-five-independent-seeds-2026-12-07"),
        ("The shipped Breakout agent (`a3c_course/data/breakout.json`), 2026-12-05",
         "the-shipped-breakout-agent-a3c_coursedatabreakoutjson-2026-12-05"),
    ],
)  # fmt: skip
def test_anchors_are_githubs(heading, expected):
    assert anchor(heading) == expected


def test_a_link_to_a_missing_section_is_found(monkeypatch):
    page = ROOT / "README.md"
    text = "[the units](#the-units) and [gone](#a-section-renamed-since)"
    monkeypatch.setattr(sys.modules[__name__], "markdown_texts", lambda: {page: text})
    assert broken_links() == ["README.md: #a-section-renamed-since"]
