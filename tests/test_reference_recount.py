"""The reference bands' tables in benchmarks/README.md are recounted from the records the package
ships (a3c_course/data/reference/<game>/): each seed's first greedy evaluation pair at or above a
score, its best evaluation and Machado et al.'s statistic at each million agent steps. A table that
no longer matches the shipped runs (new runs shipped, or a figure typed wrong) fails here."""

import json
import re
from pathlib import Path

import pytest
from benchmark_scripts import load  # tests/ is on sys.path

from a3c_course.lessons import pretrained
from a3c_course.lessons.reference import reference_runs
from a3c_course.training.run_record import training_score

README = Path(__file__).resolve().parents[1] / "benchmarks/README.md"
BAND_SECTIONS = {
    "pong": "### Pong: the defaults' reference runs, five independent seeds",
    "breakout": "### Breakout: the `breakout` preset's reference runs, five independent seeds",
}
NUMBER = r"[+-]?\d+(?:\.\d+)?"


def band_table(text: str, game: str) -> tuple[list[str], dict[int, list[str]]]:
    """The header and the rows by seed of the first table under the game's band section."""
    section = text[text.index(BAND_SECTIONS[game]) :].split("\n### ")[0]
    lines = [line for line in section.splitlines() if line.startswith("|")]
    cells = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines]
    rows = {int(row[0]): row[1:] for row in cells[2:] if row[0].isdigit()}
    return cells[0][1:], rows


def steps_in(cell: str) -> float | None:
    """'1.22M' or '**4.98M**' -> 1.22; '> 2M' (not met within the budget) -> None."""
    if cell.lstrip("*").startswith(">"):
        return None
    return float(re.search(r"(\d+\.\d+)M", cell).group(1))


def mismatches(text: str, game: str) -> list[str]:
    """Each figure of the game's band table (in `text`) that the shipped records do not give."""
    first_met = load("time_to_score").first_met
    header, rows = band_table(text, game)
    targets = [float(re.search(NUMBER, cell).group()) for cell in header if cell.startswith(">=")]
    index = json.loads((pretrained.path(game).parent / f"reference/{game}/runs.json").read_text())
    runs = reference_runs(game)
    seeds = sorted(index[name]["config"]["seed"] for name in runs)
    if sorted(rows) != seeds:
        return [f"the table's seeds {sorted(rows)}, the shipped runs' {seeds}"]
    wrong = []
    for name, records in runs.items():
        config = index[name]["config"]
        row = rows[config["seed"]]
        for target, cell in zip(targets, row, strict=False):
            met = first_met(records, target, min_gap_s=config["eval_interval_s"] / 2)
            if steps_in(cell) != (None if met is None else round(met["steps"] / 1e6, 2)):
                wrong.append(f"{name} >= {target:g}: {cell}, the records {met and met['steps']:,}")
        evaluations = [r for r in records if r["kind"] == "eval"]
        best = max(evaluations, key=lambda r: (r["mean"], -r["steps"]))
        mean, steps = re.search(rf"({NUMBER}) \((\d+\.\d+)M", row[len(targets)]).groups()
        if (float(mean), float(steps)) != (round(best["mean"], 1), round(best["steps"] / 1e6, 2)):
            wrong.append(f"{name} best: {row[len(targets)]}, the records {best['mean']}")
        machado = [float(value) for value in re.findall(NUMBER, row[len(targets) + 1])]
        budgets = range(1_000_000, 1_000_000 * len(machado) + 1, 1_000_000)
        recounted = [round(training_score(records, steps), 1) for steps in budgets]
        if machado != recounted:
            wrong.append(f"{name} Machado: {machado}, the records {recounted}")
    return wrong


@pytest.mark.parametrize("game", sorted(BAND_SECTIONS))
def test_the_band_table_is_recounted_from_the_shipped_records(game):
    assert mismatches(README.read_text(), game) == []


def test_a_figure_typed_wrong_is_found():
    assert steps_in("**4.98M**") == 4.98 and steps_in("> 2M") is None
    text = README.read_text()
    row = "| 0 | 0.68M | 1.22M | 1.80M | +16.0 (1.98M) | -0.4 / +11.0 |"
    assert row in text  # Pong's seed 0, as the records give it
    wrong = text.replace(row, row.replace("1.22M", "1.23M").replace("+11.0", "+11.1"))
    assert len(mismatches(wrong, "pong")) == 2
