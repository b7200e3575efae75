"""The course's glossary, gathered from its "New words" boxes, and a check that no word comes early.

    python tools/glossary.py write     # (re)write notebooks/glossary.md from the boxes
    python tools/glossary.py check     # every term's first use, in reading order, against its box

A "New words" box is a quoted block in a markdown cell that starts `> **New words.**`; each term it
defines is set in italics (`*term*`) and followed by its definition. The glossary lists every term
once, where it is first defined, in the course's reading order: the units 01 to 05, then the
appendix, each notebook top to bottom.

A term is *used* where its words appear in a markdown cell's prose (code, inline code, maths and
link targets are not prose), in the singular or the plural, in any case. Its first use must come in
the cell that defines it or later: a box may follow the sentence it explains, in the same cell.
Some terms are also ordinary English ("value", "state", "return"); ORDINARY lists the phrases in
which they carry their everyday sense, and those are not counted as uses.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
GLOSSARY = NOTEBOOKS / "glossary.md"
BOX_START = "> **New words.**"
TERM = re.compile(r"(?<![*\w])\*([^*\n]+?)\*(?![*\w])")

# Everyday senses that are not the technical term (whole phrases, matched case-insensitively).
ORDINARY: dict[str, list[str]] = {
    # a layer's bias vector (Unit 2), not an estimate's bias (Unit 3)
    "bias": [r"\b(?:every|each|its|a layer's|the layer's) bias(?:es)?\b", r"\bbias(?:es)? vectors?\b"],
    # a function "returns the first observation" (or "returns `obs`"): the verb, then its object
    "return": [r"\breturn(?:s|ed|ing)?(?=\s+(?:the|a|an|its|their|one|two|what|both|each|every|it|them|CODE|MATH)\b)"],
    # A3C's name spelled out (Unit 1's first cell): a name, whose words the units define later
    "advantage": [r"\basynchronous advantage actor-critic\b"],
    "asynchronous": [r"\basynchronous advantage actor-critic\b"],
}


@dataclass(frozen=True)
class Place:
    notebook: int  # position in reading order
    cell: int
    optional: bool = field(default=False, compare=False)  # under an "Optional..." heading

    def name(self) -> str:
        return f"{reading_order()[self.notebook].name} cell {self.cell}"


@dataclass(frozen=True)
class Term:
    term: str
    definition: str
    place: Place


def reading_order() -> list[Path]:
    units = sorted(p for p in NOTEBOOKS.glob("*.ipynb") if p.name[0].isdigit())
    return units + sorted(p for p in NOTEBOOKS.glob("*.ipynb") if not p.name[0].isdigit())


def cells():
    """(Place, markdown source) for every markdown cell, in reading order; a cell under a heading
    that starts with "Optional" is optional depth (until a heading of its level or above)."""
    for n, path in enumerate(reading_order()):
        optional_level = None
        for c, cell in enumerate(nbformat.read(path, as_version=4).cells):
            if cell.cell_type != "markdown":
                continue
            for line in cell.source.splitlines():
                level = len(line) - len(line.lstrip("#"))
                if not 0 < level <= 3 or not line[level:].startswith(" "):
                    continue
                if line[level:].strip().lower().startswith("optional"):
                    optional_level = level
                elif optional_level is not None and level <= optional_level:
                    optional_level = None
            yield Place(n, c, optional_level is not None), cell.source


def boxes(source: str) -> list[str]:
    """The text of each New words box in a cell (the quoted lines from the box's first line on)."""
    found, lines = [], source.splitlines()
    for i, line in enumerate(lines):
        if line.startswith(BOX_START):
            box = []
            for quoted in lines[i:]:
                if not quoted.startswith(">"):
                    break
                box.append(quoted.lstrip(">").strip())
            found.append(" ".join(box).replace("**New words.**", "", 1))
    return found


def terms_of(box: str) -> list[tuple[str, str]]:
    """(term, its definition) for each italic term in a box; the definition runs to the next term."""
    matches = list(TERM.finditer(box))
    out = []
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(box)
        definition = box[match.end() : end].strip(" -,;")
        out.append((match.group(1).strip(), definition))
    return out


def definitions(markdown: list | None = None) -> list[Term]:
    """Every box's every term, in reading order (a term may be defined again, or recalled);
    markdown: cells() already read, else they are read here."""
    return [
        Term(term, definition, place)
        for place, source in (markdown if markdown is not None else cells())
        for box in boxes(source)
        for term, definition in terms_of(box)
    ]


def glossary(markdown: list | None = None) -> list[Term]:
    """Every term at its first definition, in reading order."""
    seen, found = set(), []
    for entry in definitions(markdown):
        if entry.term.lower() not in seen:
            seen.add(entry.term.lower())
            found.append(entry)
    return found


def prose(source: str) -> str:
    """A markdown cell's prose: without code, maths, link targets, HTML tags."""
    text = re.sub(r"```.*?```", " ", source, flags=re.DOTALL)
    text = re.sub(r"\$\$.*?\$\$", " ", text, flags=re.DOTALL)
    text = re.sub(r"\$[^$\n]+\$", " MATH ", text)
    text = re.sub(r"`[^`\n]+`", " CODE ", text)  # a word still: "returns `x`" reads as a verb
    text = re.sub(r"\]\([^)]*\)", "]", text)
    return re.sub(r"<[^>]+>", " ", text)


def pattern(term: str) -> re.Pattern:
    """The term, singular or plural, as whole words; hyphens and spaces alike."""
    words = [re.escape(w) for w in re.split(r"[\s-]+", term.strip())]
    last = words[-1].removesuffix("s") if len(words[-1]) > 3 else words[-1]
    body = r"[\s-]+".join(words[:-1] + [last + r"(?:s|es)?"])
    return re.compile(rf"(?<![\w-]){body}(?![\w-])", re.IGNORECASE)


def first_use(
    term: str, texts: list[tuple[Place, str]], core_only: bool = False
) -> tuple[Place, str] | None:
    """Where the term first appears in texts, the cells' prose (in the core path only, if
    core_only), with the words around it."""
    ordinary = [re.compile(p, re.IGNORECASE) for p in ORDINARY.get(term.lower(), [])]
    for place, text in texts:
        if core_only and place.optional:
            continue
        for phrase in ordinary:
            text = phrase.sub(" ", text)
        match = pattern(term).search(text)
        if match:
            around = text[max(0, match.start() - 50) : match.end() + 50]
            return place, " ".join(around.split())
    return None


def early_uses() -> list[str]:
    """One line per term used before the cell that defines it, and per term that the core path
    uses before any core cell defines it (a learner may skip every optional section)."""
    markdown = list(cells())  # the notebooks read once, their prose extracted once
    texts = [(place, prose(source)) for place, source in markdown]
    problems, everything = [], definitions(markdown)
    for entry in glossary(markdown):
        order = (entry.place.notebook, entry.place.cell)
        use = first_use(entry.term, texts)
        if use and (use[0].notebook, use[0].cell) < order:
            problems.append(
                f"{entry.term!r} defined in {entry.place.name()}, used first in "
                f"{use[0].name()}: ...{use[1]}..."
            )
            continue
        core = [d.place for d in everything if d.term.lower() == entry.term.lower()]
        core = [place for place in core if not place.optional]
        use = first_use(entry.term, texts, core_only=True)
        if use and (not core or (use[0].notebook, use[0].cell) < (core[0].notebook, core[0].cell)):
            where = f"first in the core path in {core[0].name()}" if core else "only in optional depth"
            problems.append(
                f"{entry.term!r} defined {where} ({entry.place.name()} first), used in the core "
                f"path in {use[0].name()}: ...{use[1]}..."
            )
    return problems


def headings(markdown: list) -> dict[Place, dict[int, str]]:
    """The headings in force at each markdown cell, by level (its own, or the last ones above)."""
    found, current = {}, {}
    for place, source in markdown:
        for line in source.splitlines():
            if line.startswith("#"):
                level, title = len(line) - len(line.lstrip("#")), line.lstrip("#").strip()
                current = {k: v for k, v in current.items() if k < level} | {level: title}
        found[place] = current
    return found


def render() -> str:
    lines = [
        "# Glossary",
        "",
        "Every word the course defines, in the order the course defines it, with the section where",
        "its *New words* box stands. Written by `tools/glossary.py write` from the boxes.",
    ]
    markdown, order = list(cells()), reading_order()
    titles, current = headings(markdown), None
    for entry in glossary(markdown):
        path = order[entry.place.notebook]
        if path != current:
            lines += ["", f"## [{titles[entry.place].get(1, path.stem)}]({path.name})", ""]
            current = path
        section = max((k for k in titles[entry.place] if k > 1), default=None)
        where = f" (*{titles[entry.place][section]}*)" if section else ""
        definition = entry.definition.removeprefix(":").strip()
        joiner = ": " if entry.definition.startswith(":") else " "  # else a symbol first: "$s_t$: ..."
        lines.append(f"- **{entry.term}**{joiner}{definition}{where}")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    command = argv[0] if argv else "check"
    if command == "write":
        GLOSSARY.write_text(render())
        print(f"wrote {GLOSSARY.relative_to(ROOT)}: {len(glossary())} terms")
        return 0
    if command == "check":
        problems = early_uses()
        print("\n".join(problems) or f"{len(glossary())} terms, none used before its box")
        return 1 if problems else 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
