"""The measurement functions (a3c_course.measure.throughput) and the benchmark scripts, on tiny budgets.

These tests check structure and sanity (positive speeds, parts that add up to the wall time, the
profile's copy of update_shared making the same update), never a speed: the machine's speed is
not a property of the code.
"""

import json
import math
import subprocess
import sys
import types
from pathlib import Path

import benchmark_scripts  # tests/ is on sys.path
import pytest
import torch

from a3c_course.a3c.model import ActorCritic
from a3c_course.measure import throughput
from a3c_course.measure.profiling import (
    PROFILE_PARTS,
    layer_table,
    network_layer_times,
    profile_worker,
)
from a3c_course.measure.throughput import raw_env_speed, steady_speed, summarize, trainer_speed
from a3c_course.training.config import TrainConfig
from a3c_course.training.run_record import read_metrics

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"


@pytest.mark.parametrize(("game", "processes"), [("CartPole-v1", 1), ("pong", 1), ("pong", 2)])
def test_raw_env_speed(game, processes):
    speed = raw_env_speed(game, processes, seconds=0.3)
    assert speed.processes == processes and len(speed.per_process) == processes
    assert all(rate > 0 for rate in speed.per_process)
    assert speed.steps_per_s == pytest.approx(sum(speed.per_process))
    assert speed.steps >= processes and 0.3 <= speed.seconds < 5.0


def test_raw_env_speed_rejects_bad_arguments():
    with pytest.raises(ValueError, match="processes"):
        raw_env_speed("CartPole-v1", 0, 0.1)
    with pytest.raises(ValueError, match="seconds"):
        raw_env_speed("CartPole-v1", 1, 0.0)


# The start-up (fork, import, ALE reset: 2 s under CI's load once) is not counted in the seconds.
@pytest.mark.slow
@pytest.mark.parametrize(
    "config",
    [
        TrainConfig(game="CartPole-v1", workers=1, envs_per_worker=2),
        TrainConfig(game="pong", workers=1, envs_per_worker=2, rollout_steps=5),
    ],
    ids=["cartpole", "pong"],
)
def test_trainer_speed(config):
    speed = trainer_speed(config, seconds=1.5)
    assert (speed.workers, speed.envs_per_worker) == (1, 2)
    assert speed.steps > 0 and speed.steps % (2 * config.rollout_steps) == 0  # whole rollouts
    assert speed.steady and speed.steps_per_s > 0 and speed.overall_steps_per_s > 0
    assert speed.overall_steps_per_s == pytest.approx(speed.steps / speed.seconds)
    assert speed.seconds >= 1.5


def test_trainer_speed_stops_the_given_seconds_after_the_first_loss_report(monkeypatch):
    clock = iter([0.0, 5.0, 10.0, 12.9, 13.0])
    monkeypatch.setattr(throughput.time, "monotonic", lambda: next(clock))
    stop = throughput._stop_after(3.0)
    episode, loss = {"kind": "episode"}, {"kind": "loss"}
    stop(types.SimpleNamespace(history=[episode]))  # t=0: start-up, not counted
    stop(types.SimpleNamespace(history=[episode]))  # t=5
    stop(types.SimpleNamespace(history=[episode, loss]))  # t=10: the first report
    stop(types.SimpleNamespace(history=[episode, loss, loss]))  # t=12.9
    with pytest.raises(KeyboardInterrupt):
        stop(types.SimpleNamespace(history=[episode, loss, loss]))  # t=13: 3 s measured


def test_steady_speed_uses_the_first_and_last_loss_reports():
    history = [
        {"kind": "episode", "steps": 10, "elapsed_s": 0.5},
        {"kind": "loss", "steps": 100, "elapsed_s": 1.0},
        {"kind": "loss", "steps": 250, "elapsed_s": 2.0},
        {"kind": "episode", "steps": 300, "elapsed_s": 2.2},
        {"kind": "loss", "steps": 400, "elapsed_s": 3.0},
    ]
    assert steady_speed(history) == pytest.approx(150.0)
    assert steady_speed(history[:2]) is None  # one report
    assert steady_speed([history[1], {"kind": "loss", "steps": 150, "elapsed_s": 1.5}]) is None


@pytest.mark.parametrize(
    ("config", "seconds"),
    [
        (TrainConfig(game="CartPole-v1", envs_per_worker=1, rollout_steps=10), 0.3),
        (TrainConfig(game="pong", envs_per_worker=2, rollout_steps=5), 0.5),
    ],
    ids=["cartpole", "pong"],
)
def test_profile_worker_parts_add_up(config, seconds):
    threads = torch.get_num_threads()
    profile = profile_worker(config, seconds)
    assert torch.get_num_threads() == threads  # restored
    assert set(profile.parts) == set(PROFILE_PARTS)
    assert all(value >= 0 for value in profile.parts.values())
    for part in ("emulator", "forward", "backward", "optimizer", "sync", "loss"):
        assert profile.parts[part] > 0, part
    assert profile.steps == profile.rollouts * config.rollout_steps * config.envs_per_worker
    assert profile.seconds >= seconds
    assert sum(profile.parts.values()) == pytest.approx(profile.seconds, rel=1e-6)
    assert sum(profile.shares().values()) == pytest.approx(1.0, rel=1e-6)
    assert profile.steps_per_s == pytest.approx(profile.steps / profile.seconds)
    table = profile.table()
    assert all(f"| {part} |" in table for part in PROFILE_PARTS)


def test_network_layer_times_follow_the_shapes_through_the_network():
    model = ActorCritic((1, 42, 42), 6, hidden_size=32, conv_filters=8)
    weights = [p.detach().clone() for p in model.parameters()]
    times = network_layer_times(model, batch=3, repeats=2)
    assert [t.name for t in times] == [
        "body 1, Conv2d: 1 x 42 x 42 -> 8 x 21 x 21",
        "body 2, Conv2d: 8 x 21 x 21 -> 8 x 11 x 11",
        "body 3, Conv2d: 8 x 11 x 11 -> 8 x 6 x 6",
        "body 4, Conv2d: 8 x 6 x 6 -> 72",  # with the closing Flatten
        "LSTM cell: 72 -> 32",
        "heads: 32 -> 1 + 6",
    ]
    assert all(t.batch == 3 and t.forward_ms > 0 and t.backward_ms > 0 for t in times)
    assert times[0].per_step_ms == pytest.approx((times[0].forward_ms + times[0].backward_ms) / 3)
    # Untouched: same weights, no gradients left behind.
    assert all(p.grad is None for p in model.parameters())
    assert all(torch.equal(p, w) for p, w in zip(model.parameters(), weights, strict=True))
    table = layer_table(times)
    assert table.count("| body ") == 4 and "| **all** |" in table


def test_network_layer_times_rejects_bad_arguments():
    model = ActorCritic((4,), 2, hidden_size=8)
    with pytest.raises(ValueError, match=r"batch must be an integer >= 1, got 0"):
        network_layer_times(model, batch=0)
    with pytest.raises(ValueError, match=r"repeats must be an integer >= 1, got 1.5"):
        network_layer_times(model, batch=2, repeats=1.5)


def test_profile_splits_emulator_from_preprocessing_on_atari():
    profile = profile_worker(TrainConfig(game="pong", rollout_steps=5), 0.3)
    # The resize and crop cost something, but less than the 4 emulated frames of each step.
    assert 0 < profile.parts["preprocessing"] < profile.parts["emulator"]


def test_summarize():
    s = summarize([300.0, 100.0, 200.0])
    assert (s["median"], s["min"], s["max"], s["n"]) == (200.0, 100.0, 300.0, 3)
    assert s["spread"] == pytest.approx(1.0)
    assert summarize([5.0])["spread"] == 0.0
    assert math.isnan(summarize([0.0, 0.0])["spread"])
    with pytest.raises(ValueError):
        summarize([])


# -- the scripts ---------------------------------------------------------------------------------


def run_script(name, *args, timeout=120):
    return subprocess.run(
        [sys.executable, str(BENCHMARKS / name), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )


@pytest.mark.parametrize("name", ["throughput", "time_to_score", "profile_worker"])
def test_script_help(name, capsys):
    # In this process (each script also runs as a script in a tiny run below).
    with pytest.raises(SystemExit) as done:
        benchmark_scripts.load(name).build_parser().parse_args(["--help"])
    out = capsys.readouterr().out
    assert done.value.code == 0 and out.startswith("usage:")
    assert ("--seeds" if name == "time_to_score" else "--seconds") in out


def test_throughput_counts_option():
    module = benchmark_scripts.load("throughput")
    assert module.counts("3") == [1, 2, 3]
    assert module.counts("1,4,8") == [1, 4, 8]
    assert module.counts("2,") == [2]
    assert module.counts("2,2,1") == [2, 1]


@pytest.mark.slow
def test_throughput_script_tiny_run():
    done = run_script(
        "throughput.py", "--game", "CartPole-v1", "--workers", "1", "--envs", "1,2",
        "--seconds", "0.5", "--repeats", "1",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if line.startswith("| 1 |")]
    assert [row.split("|")[2].strip() for row in rows] == ["1", "2"]
    for row in rows:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        assert float(cells[2].rstrip("*")) > 0 and float(cells[4]) > 0
        assert cells[6].rstrip("*").endswith("%")
    if "*" in done.stdout:  # half a second may be too short for a steady speed: then it says so
        assert "too short for a steady speed" in done.stdout


@pytest.mark.slow
def test_throughput_script_compares_networks_side_by_side(capsys):
    done = run_script(
        "throughput.py", "--workers", "1,", "--envs", "2,", "--seconds", "1.0", "--repeats", "1",
        "--networks", "default,original,relu/8/16",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if line.startswith("| 1 | 2 |")]
    assert [row.split("|")[3].strip() for row in rows] == [
        "default (relu/16/128)",
        "original (elu/32/256)",
        "relu/8/16",
    ]
    with pytest.raises(SystemExit) as bad:  # in this process: no second interpreter to start
        benchmark_scripts.load("throughput").build_parser().parse_args(["--networks", "relu/32"])
    assert bad.value.code == 2 and "ACTIVATION/FILTERS/LSTM" in capsys.readouterr().err


@pytest.mark.slow
def test_profile_script_tiny_run_compares_kernels_interleaved():
    done = run_script(
        "profile_worker.py", "--game", "CartPole-v1", "--envs", "1,2", "--seconds", "0.2",
        "--kernels", "native,onednn", "--rounds", "2",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("| backward |") == 8  # 2 settings x 2 kernels x 2 rounds
    assert "1 env(s) per worker" in done.stdout and "2 env(s) per worker" in done.stdout
    order = [line for line in done.stdout.splitlines() if line.startswith("2 environments, kernels")]
    assert order == ["2 environments, kernels native:", "2 environments, kernels onednn:"] * 2
    assert "2 environments, agent steps/s (median of 2): native " in done.stdout


def test_profile_script_refuses_unknown_kernels(capsys):
    profile_script = benchmark_scripts.load("profile_worker")
    with pytest.raises(SystemExit):
        profile_script.build_parser().parse_args(["--kernels", "cudnn"])
    assert "kernels must be among auto, native, onednn" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        profile_script.build_parser().parse_args(["--rounds", "0"])
    assert "must be at least 1, got 0" in capsys.readouterr().err


@pytest.mark.slow
def test_profile_script_layers():
    done = run_script(
        "profile_worker.py", "--game", "CartPole-v1", "--envs", "2", "--seconds", "0.2", "--layers"
    )
    assert done.returncode == 0, done.stderr
    assert "the network's parts alone, 2 inputs per call" in done.stdout
    assert "| body 1, Linear: 4 -> 64 |" in done.stdout and "| **all** |" in done.stdout


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["after", "live"])
def test_time_to_score_script_tiny_run(tmp_path, mode):
    out = tmp_path / "tts"
    done = run_script(
        "time_to_score.py", "--game", "CartPole-v1", "--workers", "1", "--target-score", "5",
        "--eval-episodes", "2", "--eval-interval-s", "0.3", "--max-minutes", "0.05",
        "--seeds", "0,1", "--out", str(out), "--quiet",
        *(["--eval-mode", "live", "--consecutive", "1"] * (mode == "live")),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["seeds"] == [0, 1] and summary["target_score"] == 5.0
    assert summary["config"]["workers"] == 1 and summary["config"]["eval_mode"] == mode
    for run in summary["runs"]:
        assert Path(run["learning_curve"]).is_file()
        if run["met"]:  # a random CartPole policy scores about 20: met at an early evaluation
            assert run["eval_mean"] >= 5 and run["frames"] == run["steps"] > 0
        # live (one evaluation suffices here): training stops at the first evaluation that meets
        # the target; after: it runs for its 3 s and the snapshots are scored afterwards, the
        # first of two in a row that meet it found among them.
        assert run["stop_reason"] == ("target_score" if mode == "live" else "max_minutes")
        assert 0 < run["wall_s"] <= run["total_wall_s"] <= 3.5
    assert summary["met"] == "2/2"
    assert summary["steps"]["n"] == 2
    # The same runs, read back from their folders: the same first-met points, without training.
    # One run's settings edited afterwards: the summary must say that the runs differ there.
    edited = out / "seed-1" / "config.json"
    edited.write_text(json.dumps({**json.loads(edited.read_text()), "lr": 1e-3}))
    again = benchmark_scripts.load("time_to_score").main([  # in this process: it trains nothing
        "--from-runs", str(out / "seed-0"), str(out / "seed-1"),
        "--target-score", "5", "--out", str(tmp_path / "read"),
        *(["--consecutive", "1"] * (mode == "live")),  # its live runs stopped at one evaluation
    ])  # fmt: skip
    assert again == 0
    reread = json.loads((tmp_path / "read" / "summary.json").read_text())
    assert reread["seeds"] == [0, 1] and reread["met"] == "2/2"
    assert reread["config"]["workers"] == 1 and "seed" not in reread["config"]
    assert reread["config"]["lr"] == {"differs": [summary["config"]["lr"], 1e-3]}
    assert [run["config"]["lr"] for run in reread["runs"]] == [summary["config"]["lr"], 1e-3]
    for first, second in zip(summary["runs"], reread["runs"], strict=True):
        assert (second["steps"], second["eval_mean"]) == (first["steps"], first["eval_mean"])


@pytest.mark.slow
def test_time_to_score_rescores_snapshots_with_other_evaluation_settings(tmp_path, capsys):
    out = tmp_path / "tts"
    done = run_script(
        "time_to_score.py", "--game", "CartPole-v1", "--workers", "1", "--target-score", "50",
        "--eval-episodes", "2", "--eval-interval-s", "0.5", "--max-minutes", "0.04",
        "--out", str(out), "--quiet",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    trained = read_metrics(out / "seed-0" / "metrics.jsonl")
    scored = [r for r in trained if r["kind"] == "eval"]

    script = benchmark_scripts.load("time_to_score")  # in this process: rescoring trains nothing

    def rescored(*options):
        again = script.main([
            "--from-runs", str(out / "seed-0"), "--rescore",
            "--target-score", "50", "--out", str(tmp_path / "again"), *options,
        ])  # fmt: skip
        assert again == 0, capsys.readouterr().err
        folder = tmp_path / "again" / "seed-0"
        return json.loads((tmp_path / "again" / "summary.json").read_text()), folder

    # The same settings replay the same episodes: the same scores, snapshot by snapshot.
    summary, folder = rescored()
    run = summary["runs"][0]
    assert run["evaluations"] == len(scored) and (folder / "learning_curve.png").is_file()
    assert run["best_eval_mean"] == max(r["mean"] for r in scored)
    # Other settings: here 3 episodes per snapshot instead of 2.
    summary, _ = rescored("--eval-episodes", "3")
    assert summary["config"]["eval_episodes"] == 3
    assert summary["runs"][0]["evaluations"] == len(scored)
    # Only what was given changes; a live run has no snapshots to score.
    assert summary["config"]["lr"] == json.loads((out / "seed-0" / "config.json").read_text())["lr"]
    live = tmp_path / "live"
    live.mkdir()
    (live / "config.json").write_text((out / "seed-0" / "config.json").read_text())
    (live / "metrics.jsonl").write_text("")
    capsys.readouterr()
    assert script.main(["--from-runs", str(live), "--rescore"]) == 2
    assert "has no snapshots to score" in capsys.readouterr().err
    assert script.main(["--rescore"]) == 2
    assert "--rescore needs --from-runs" in capsys.readouterr().err


def test_time_to_score_rejects_a_bad_setting(capsys):
    script = benchmark_scripts.load("time_to_score")
    assert script.main(["--game", "CartPole-v1", "--eval-episodes", "0"]) == 2
    assert "eval-episodes" in capsys.readouterr().err


def test_time_to_score_counts_the_first_of_two_consecutive_evaluations():
    module = benchmark_scripts.load("time_to_score")
    means = [-20, 19, 12, 18.5, 17, 18, 20, 21]  # a lucky 19, a pair broken, then 18, 20, 21
    history = [{"kind": "eval", "steps": 100 * k, "mean": m} for k, m in enumerate(means)]
    history.insert(3, {"kind": "episode", "steps": 250, "score": 21})  # not an evaluation
    shuffled = history[::-1]  # the order of the records does not matter, their steps do
    assert module.first_met(shuffled, 18)["steps"] == 500  # 18 at 500, then 20 at 600
    assert module.first_met(history, 18, consecutive=1)["steps"] == 100
    assert module.first_met(history, 18, consecutive=3)["steps"] == 500
    assert module.first_met(history, 20.5, consecutive=2) is None


def test_an_end_of_training_snapshot_right_after_the_last_does_not_confirm_it():
    module = benchmark_scripts.load("time_to_score")
    history = [
        {"kind": "eval", "steps": 100, "mean": 5.0, "elapsed_s": 60.0},
        {"kind": "eval", "steps": 200, "mean": 19.0, "elapsed_s": 120.0},
        {"kind": "eval", "steps": 201, "mean": 18.5, "elapsed_s": 120.1},  # the final snapshot
    ]
    assert module.first_met(history, 18)["steps"] == 200  # without a gap, the final counts
    assert module.first_met(history, 18, min_gap_s=30.0) is None
    history.append({"kind": "eval", "steps": 300, "mean": 18.0, "elapsed_s": 180.0})
    assert module.first_met(history, 18, min_gap_s=30.0)["steps"] == 200
