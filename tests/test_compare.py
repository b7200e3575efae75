"""benchmarks/compare.py: settings interleaved by seed, medians with bounds, one table."""

import json
import math
from pathlib import Path
from types import SimpleNamespace

import pytest
from benchmark_scripts import load


@pytest.fixture(scope="module")
def compare():
    return load("compare")


def run(minutes, budget=10.0, steps=None):
    met = minutes is not None
    return {"met": met, "minutes": minutes, "steps": steps if met else None,
            "budget_minutes": budget, "total_steps": 1_500_000, "best": 12.0}  # fmt: skip


def test_a_setting_names_its_script_and_options(compare):
    assert compare.setting("defaults=--max-minutes 10") == ("defaults", "course", ["--max-minutes", "10"])
    assert compare.setting("a2c=sb3: --vec-env dummy") == ("a2c", "sb3", ["--vec-env", "dummy"])
    with pytest.raises(Exception, match="NAME=OPTIONS"):
        compare.setting("--max-minutes 10")


def test_a_missed_target_counts_as_more_than_the_budget(compare):
    assert compare.median_of([run(4.0), run(None), run(6.0)], "minutes") == (6.0, False)
    assert compare.median_of([run(4.0), run(None), run(None, budget=11.0)], "minutes") == (10.0, True)
    assert compare.ratio((5.0, False), (15.0, False)) == "3.00x"
    assert compare.ratio((5.0, False), (30.0, True)).startswith("at least 6.00x")
    assert compare.ratio((10.0, True), (20.0, False)).startswith("at most 2.00x")
    assert not math.isinf(compare.median_of([run(None)], "steps")[0])


def test_the_runs_go_seed_by_seed_through_every_setting(compare, tmp_path, monkeypatch):
    started = []

    def fake_run(argv, check):  # each run writes its script's summary.json, as the scripts do
        out = Path(argv[argv.index("--out") + 1])
        started.append((Path(argv[1]).name, *out.relative_to(tmp_path).parts))
        out.mkdir(parents=True)
        missed = {"met": False, "wall_s": None, "steps": None, "total_wall_s": 60.0,
                  "total_steps": 1_000, "best_eval_mean": -21.0}  # fmt: skip
        (out / "summary.json").write_text(json.dumps({"runs": [missed], "command": "x"}))

    monkeypatch.setattr(compare, "subprocess", SimpleNamespace(run=fake_run))  # compare.py's alone
    monkeypatch.setattr(compare, "raw_speed", lambda args: 5_000)
    settings = ["--setting", "a=--lr 1e-3", "--setting", "b=sb3: --max-minutes 1"]
    assert compare.main(["--seeds", "0,1,2", *settings, "--out", str(tmp_path)]) == 0
    assert started == [
        (script, name, f"seed-{seed}")
        for seed in (0, 1, 2)
        for name, script in (("a", "time_to_score.py"), ("b", "sb3_time_to_score.py"))
    ]
    table = (tmp_path / "comparison.md").read_text()
    assert "| b | > 1,000, > 1,000, > 1,000 |" in table  # agent steps first, bounds as bounds
    header = next(line for line in table.splitlines() if line.startswith("| setting"))
    assert header.index("agent steps") < header.index("minutes")


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_two_settings_end_to_end_on_cartpole(compare, tmp_path, capsys):
    settings = ["--setting", "a=--max-minutes 0.05 --eval-interval-s 1",
                "--setting", "b=--lr 1e-3 --max-minutes 0.05 --eval-interval-s 1"]  # fmt: skip
    code = compare.main(["--game", "CartPole-v1", "--target-score", "100", "--seeds", "0",
                         *settings, "--speed-seconds", "0.5", "--out", str(tmp_path)])  # fmt: skip
    assert code == 0
    out = capsys.readouterr().out
    order = [line.split(":")[0] for line in out.splitlines() if line.startswith("seed ") and "," in line.split(":")[0]]
    assert order == ["seed 0, a", "seed 0, b"]
    record = json.loads((tmp_path / "comparison.json").read_text())
    assert record["raw_speed_before"] > 0 and record["raw_speed_after"] > 0
    assert [len(runs) for runs in record["results"].values()] == [1, 1]
    table = (tmp_path / "comparison.md").read_text()
    assert "| a |" in table and "| b |" in table and "agent steps/s before" in table
