"""Training end to end: CartPole learned by two workers (a training mean of 195, CartPole-v0's
"solved"; v1's is 475), a Pong smoke run, both start methods, and clean stops (interrupt, crashing
worker, killed worker) that leave no process behind."""

import json
import os
import signal
import time

import psutil
import pytest
import torch
import torch.multiprocessing as mp

import a3c_course.a3c.worker
from a3c_course.lessons.play import play_episodes
from a3c_course.training.backend import build_shared_model
from a3c_course.training.checkpoint import load_checkpoint, model_from_checkpoint
from a3c_course.training.config import TrainConfig
from a3c_course.training.evaluate import eval_seed, evaluate
from a3c_course.training.run_record import WorkerError
from a3c_course.training.trainer import train

# CartPole settings, measured on the course's 2-core machine shared with other jobs: a learning
# rate of 3e-3 (Atari's 1e-4 is far too slow here), 8 environments per worker stepped with one
# batched forward pass, 10-step rollouts, a 64-unit LSTM. Three seeds reached 195 in 86k-118k agent
# steps, 24-31 s; 4 environments per worker (lr 2e-3) took 82k-358k steps, 20-90 s.
CARTPOLE = dict(
    game="CartPole-v1",
    workers=2,
    envs_per_worker=8,
    rollout_steps=10,
    lr=3e-3,
    hidden_size=64,
    eval_episodes=0,
)


# The learning tests' threshold and budgets (both backends: test_cluster.py has Ray's), set from the
# rate at which a run misses (benchmarks/learning_test_rate.py, 2026-12-06, AMD EPYC 2 cores, each
# run beside two CPU hogs as in the full suite): 50 seeded runs all reached 195, median 137,320
# agent steps, 90% by 294,016, the slowest 458,320. Misses by budget: 18% at 200,000, 8% at
# 300,000, 4% at 400,000 (the two unexplained full-suite failures were at 400,000: this tail),
# none of 50 at 600,000. The tail halves about every 100,000 steps, so at 800,000 about 1 run in
# 400 would miss. It is Hogwild's own variance, not a fault: the same seed took 99,000-109,000
# steps alone and 458,320 beside the hogs (the order in which gradients land differs), and the
# slowest runs' entropy (0.43-0.50 per step at its lowest) and staleness (under 1.7) look like the
# others'. 800,000 steps take about 2.5 minutes under that load; max_minutes stays the bound.
LEARNS_CARTPOLE = dict(seed=1, target_score=195.0, max_steps=800_000, max_minutes=3.5)


def assert_no_children_left(pids):
    assert mp.active_children() == []
    alive = [
        pid for pid in pids if psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie"
    ]
    assert alive == []


def child_pids():
    return [child.pid for child in mp.active_children()]


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_two_workers_learn_cartpole(tmp_path):
    config = TrainConfig(**CARTPOLE, **LEARNS_CARTPOLE, out_dir=str(tmp_path))
    result = train(config, progress=False)
    assert result.stop_reason == "target_score", (result.steps, result.recent_score())
    scores = [r["score"] for r in result.episodes()]
    windows = [sum(scores[i - 20 : i]) / 20 for i in range(20, len(scores) + 1)]
    assert max(windows) >= 195.0  # the mean return over 20 consecutive episodes
    assert result.steps <= LEARNS_CARTPOLE["max_steps"] + 2 * 8 * 10
    # The checkpoint holds the trained network as it was when training stopped. (How well it plays
    # is not asserted: at this learning rate the policy can already have slipped in the second
    # between reaching the target and stopping the workers; seen in about 1 run in 4.)
    checkpoint = load_checkpoint(result.checkpoint, expect_game="CartPole-v1")
    assert checkpoint.metadata["stop_reason"] == "target_score"
    assert checkpoint.metadata["steps"] == result.steps
    initial = build_shared_model(config).state_dict()
    trained = model_from_checkpoint(checkpoint).state_dict()
    assert all(not torch.equal(initial[name], trained[name]) for name in initial)


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_pong_smoke_run_writes_metrics_and_a_loadable_checkpoint(tmp_path):
    config = TrainConfig(
        game="pong",
        workers=2,
        # 50 rollouts of 40 steps: a small budget could all be spent by one worker while the
        # other was still making its environments, and that one then stopped without a rollout
        max_steps=2_000,
        envs_per_worker=2,
        eval_interval_s=0.2,
        eval_episodes=1,
        eval_max_episode_steps=30,
        out_dir=str(tmp_path / "pong"),
    )
    result = train(config, progress=False)
    assert result.stop_reason == "max_steps" and result.steps >= 2_000
    losses = result.losses()
    assert {r["worker"] for r in losses} == {0, 1}
    assert sum(r["rollouts"] for r in losses) * config.rollout_steps * config.envs_per_worker == result.steps
    assert result.evaluations() and result.evaluations()[0]["capped"] == 1
    lines = result.metrics_path.read_text().splitlines()
    assert [json.loads(line) for line in lines] == result.history
    config_file = json.loads((tmp_path / "pong" / "config.json").read_text())
    assert TrainConfig.from_dict(config_file) == config
    checkpoint = load_checkpoint(result.checkpoint, expect_game="pong")
    assert checkpoint.metadata["steps"] == result.steps
    assert checkpoint.metadata["stop_reason"] == "max_steps"
    assert model_from_checkpoint(checkpoint).n_actions == 6
    assert_no_children_left([])


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_a_network_trained_on_84x84_frames_is_scored_and_filmed_on_84x84_frames(tmp_path):
    config = TrainConfig(
        game="pong", workers=1, envs_per_worker=2, frame_size=84, max_steps=400, eval_episodes=0,
        out_dir=str(tmp_path),
    )  # fmt: skip
    checkpoint = load_checkpoint(train(config, progress=False).checkpoint)
    model = model_from_checkpoint(checkpoint)
    assert model.obs_shape == (1, 84, 84) and checkpoint.config.frame_size == 84
    scored = evaluate(checkpoint, episodes=2, max_steps_per_episode=20)
    assert len(scored.scores) == 2 and all(scored.capped)
    filmed = play_episodes("pong", model, max_steps=3)[0]
    assert filmed.observations[0].shape == (1, 84, 84)


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_best_checkpoint_holds_the_network_of_the_best_evaluation(tmp_path):
    config = TrainConfig(
        **dict(CARTPOLE, eval_episodes=2, eval_interval_s=0.3),
        max_steps=25_000,
        out_dir=str(tmp_path),
    )
    stale = tmp_path / "best.pt"
    stale.write_bytes(b"an earlier run's best network")
    result = train(config, progress=False)
    means = [r["mean"] for r in result.evaluations()]
    assert len(means) >= 2, means
    best = load_checkpoint(result.best_checkpoint, expect_game="CartPole-v1")
    assert result.best_checkpoint == stale  # replaced: a fresh run starts without a best
    assert best.metadata["eval_mean"] == max(means)
    first_best = next(r for r in result.evaluations() if r["mean"] == max(means))
    assert best.metadata["steps"] == first_best["steps"]
    assert best.metadata["eval_scores"] == first_best["scores"]
    # The weights are the ones that earned the score: replaying the evaluation's seeds with
    # best.pt gives the same scores (CartPole's greedy play is deterministic given the seed).
    rounds = result.evaluations().index(first_best)
    replay = evaluate(
        best,
        "CartPole-v1",
        2,
        max_steps_per_episode=config.eval_max_episode_steps,
        seed=eval_seed(config, rounds),
    )
    assert replay.scores == first_best["scores"]


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_eval_mode_after_scores_snapshots_once_training_stops(tmp_path):
    config = TrainConfig(
        **dict(CARTPOLE, eval_episodes=2, eval_interval_s=2.0, eval_mode="after"),
        max_minutes=0.1,  # a time budget: snapshots at 2 s and 4 s, and the final one at 6 s
        out_dir=str(tmp_path),
    )
    stale = tmp_path / "snapshots" / "snapshot-0000000001.pt"
    stale.parent.mkdir()
    stale.write_bytes(b"an earlier run's snapshot")
    pids = []

    def while_training(run):
        if run.stop_reason is None:  # once it is set, the scoring pool's processes are expected
            pids.extend(child_pids())

    result = train(config, on_metrics=while_training, progress=False)
    assert result.stop_reason == "max_minutes"
    assert len(set(pids)) == 2  # the workers only: no evaluator process beside them
    assert not stale.exists()
    evaluations = result.evaluations()
    snapshots = sorted((tmp_path / "snapshots").glob("*.pt"))
    assert [r["snapshot"] for r in evaluations] == [path.name for path in snapshots]
    assert len(evaluations) >= 2
    # Each record is its snapshot's: the steps and training time at which it was taken, in order,
    # the last one being the network training ended with, none after training stopped.
    steps = [r["steps"] for r in evaluations]
    times = [r["elapsed_s"] for r in evaluations]
    assert steps == sorted(steps) and times == sorted(times)
    assert steps[-1] == result.steps and times[-1] == pytest.approx(result.elapsed_s, abs=0.01)
    for record, path in zip(evaluations, snapshots, strict=True):
        snapshot = load_checkpoint(path, expect_game="CartPole-v1")
        assert snapshot.metadata["steps"] == record["steps"]
        assert snapshot.metadata["elapsed_s"] == record["elapsed_s"]
    final = load_checkpoint(snapshots[-1])
    last = load_checkpoint(result.checkpoint)
    assert all(torch.equal(final.model_state[k], v) for k, v in last.model_state.items())
    # A record's scores are its snapshot's: replaying the round's seeds gives the same scores, and
    # best.pt holds the snapshot with the best mean.
    best_round = max(range(len(evaluations)), key=lambda k: evaluations[k]["mean"])
    best_record = evaluations[best_round]
    replay = evaluate(
        snapshots[best_round],
        episodes=2,
        max_steps_per_episode=config.eval_max_episode_steps,
        seed=eval_seed(config, best_round),
    )
    assert replay.scores == best_record["scores"]
    best = load_checkpoint(result.best_checkpoint)
    assert best.metadata["eval_mean"] == best_record["mean"]
    assert best.metadata["steps"] == best_record["steps"]
    snapshot = load_checkpoint(snapshots[best_round]).model_state
    assert all(torch.equal(snapshot[k], v) for k, v in best.model_state.items())
    lines = result.metrics_path.read_text().splitlines()
    assert [json.loads(line) for line in lines] == result.history
    assert_no_children_left(pids)


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_spawn_start_method(tmp_path):
    config = TrainConfig(
        **dict(CARTPOLE, eval_episodes=1, eval_interval_s=0.3),
        start_method="spawn",
        max_steps=3000,
        out_dir=str(tmp_path),
    )
    result = train(config, progress=False)
    assert result.stop_reason == "max_steps"
    assert {r["worker"] for r in result.losses()} == {0, 1} and result.episodes()
    assert_no_children_left([])


@pytest.mark.timeout(120)
def test_an_interrupt_stops_every_child_and_saves_a_checkpoint(tmp_path):
    """KeyboardInterrupt is what Ctrl-C or a notebook's stop button raises in the parent."""
    pids = []

    def interrupt(result):
        pids.extend(child_pids())
        if result.steps >= 500:
            raise KeyboardInterrupt

    config = TrainConfig(
        **dict(CARTPOLE, eval_episodes=1, eval_interval_s=0.2), out_dir=str(tmp_path)
    )
    result = train(config, on_metrics=interrupt, progress=False)
    assert result.stop_reason == "interrupted"
    assert len(set(pids)) == 3  # two workers and the evaluator were running
    assert_no_children_left(pids)
    assert load_checkpoint(result.checkpoint).metadata["stop_reason"] == "interrupted"


def failing_loss(*args, **kwargs):
    raise RuntimeError("injected failure in the loss")


@pytest.mark.timeout(120)
def test_a_crashing_worker_fails_train_with_its_traceback(tmp_path, monkeypatch):
    monkeypatch.setattr(a3c_course.a3c.worker, "rollout_loss", failing_loss)  # inherited under fork
    config = TrainConfig(**CARTPOLE, start_method="fork", out_dir=str(tmp_path))
    started = time.monotonic()
    with pytest.raises(WorkerError) as error:
        train(config, progress=False)
    assert time.monotonic() - started < 30
    message = str(error.value)
    assert "failed:\nTraceback (most recent call last)" in message
    assert "RuntimeError: injected failure in the loss" in message
    assert "worker_loop" in message
    assert error.value.result.stop_reason == "worker_failed"
    assert load_checkpoint(tmp_path / "checkpoint.pt").metadata["stop_reason"] == "worker_failed"
    assert_no_children_left([])


@pytest.mark.timeout(120)
def test_a_killed_worker_fails_train_with_its_exit_signal(tmp_path):
    killed = []

    def kill_one_worker(result):
        if not killed:
            worker = next(c for c in mp.active_children() if c.name == "a3c-worker-1")
            os.kill(worker.pid, signal.SIGKILL)
            killed.append(worker.pid)

    config = TrainConfig(**CARTPOLE, out_dir=str(tmp_path))
    with pytest.raises(
        WorkerError, match=r"a3c-worker-1 died \(signal 9\) without sending a traceback"
    ):
        train(config, on_metrics=kill_one_worker, progress=False)
    assert_no_children_left(killed)


def test_an_error_in_on_metrics_stops_children_and_propagates(tmp_path):
    def broken(result):
        raise ValueError("plotting failed")

    config = TrainConfig(**CARTPOLE, out_dir=str(tmp_path))
    with pytest.raises(ValueError, match="plotting failed"):
        train(config, on_metrics=broken, progress=False)
    assert_no_children_left([])
    assert (tmp_path / "checkpoint.pt").exists()


def test_after_a_stall_the_next_snapshot_is_one_interval_on_not_a_burst():
    """Snapshots fall due at multiples of eval_interval_s; a run stopped for 4.5 intervals (a
    machine asleep) takes one snapshot when it wakes and the next at the following multiple, not
    the four it missed in a row (which bunched 5 snapshots within 800 agent steps)."""
    from a3c_course.training.trainer import next_multiple

    assert next_multiple(1.0, 1.0) == 2.0  # on time: the next multiple
    assert next_multiple(5.5, 1.0) == 6.0  # woke at 5.5 s: due at 6, not at 2, 3, 4 and 5
    assert next_multiple(119.9, 60.0) == 120.0
    assert next_multiple(0.0, 60.0) == 60.0
