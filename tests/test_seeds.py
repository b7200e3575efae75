"""A run's seeds: two run seeds share none (network, workers, environments, evaluation games), a
worker's restart gets fresh ones, and the trainer's workers and evaluations really use them."""

import itertools
import queue
import threading

import torch.multiprocessing as mp

from a3c_course.a3c.model import ActorCritic
from a3c_course.a3c.optim import SharedAdam
from a3c_course.training import evaluate as evaluate_module
from a3c_course.training import seeds, worker_loop
from a3c_course.training.checkpoint import load_checkpoint
from a3c_course.training.config import TrainConfig
from a3c_course.training.evaluate import eval_seed
from a3c_course.training.hogwild import SharedMemoryLink
from a3c_course.training.trainer import train

RUN_SEEDS = range(10)
WORKERS, ENVS, STARTS, ROUNDS, GAMES = 8, 16, 3, 60, 10


def every_seed_of(run_seed: int) -> dict[int, str]:
    """Every seed a run with this seed uses (at the sizes above), each with what it is for."""
    used = {seeds.network_seed(run_seed): "network"}
    for worker, start in itertools.product(range(WORKERS), range(STARTS)):
        mine = seeds.worker_seeds(run_seed, worker, ENVS, start)
        used[mine.torch] = f"worker {worker} start {start} torch"
        used.update({s: f"worker {worker} start {start} env {e}" for e, s in enumerate(mine.envs)})
    for round_index in range(ROUNDS):
        first = seeds.evaluation_seed(run_seed, round_index)
        used.update({first + game: f"round {round_index} game {game}" for game in range(GAMES)})
    return used


def test_two_run_seeds_share_no_seed_and_one_run_uses_each_seed_once():
    runs = {run_seed: every_seed_of(run_seed) for run_seed in RUN_SEEDS}
    per_run = 1 + WORKERS * STARTS * (1 + ENVS) + ROUNDS * GAMES
    assert all(len(used) == per_run for used in runs.values())  # no seed twice within a run
    for a, b in itertools.combinations(RUN_SEEDS, 2):
        shared = runs[a].keys() & runs[b].keys()
        assert not shared, f"run seeds {a} and {b} share {[runs[a][s] for s in shared][:3]}"
    everything = [s for used in runs.values() for s in used]
    assert all(0 <= s < 2**62 + GAMES for s in everything)  # a valid seed for torch, numpy, ALE


def test_seeds_are_fixed_by_the_run_seed_and_what_they_are_for():
    assert seeds.worker_seeds(3, 1, 4) == seeds.worker_seeds(3, 1, 4, start=0)
    assert seeds.worker_seeds(3, 1, 4).envs[:2] == seeds.worker_seeds(3, 1, 2).envs  # a prefix
    assert seeds.worker_seeds(3, 1, 4, start=1) != seeds.worker_seeds(3, 1, 4)
    assert seeds.evaluation_seed(3, 0) != seeds.evaluation_seed(4, 0)


def test_the_old_offsets_overlapped_and_the_derived_seeds_do_not():
    """What the derivation replaced: seed + 1 + w * envs + e gave runs 0 and 1 fifteen of their
    sixteen environments in common (two workers of eight)."""
    old = {run: {run + 1 + w * 8 + e for w in range(2) for e in range(8)} for run in (0, 1)}
    assert len(old[0] & old[1]) == 15
    new = {run: set(seeds.worker_seeds(run, 0, 8).envs + seeds.worker_seeds(run, 1, 8).envs)
           for run in (0, 1)}  # fmt: skip
    assert not new[0] & new[1]


def test_a_worker_plays_its_own_seeds_and_a_restart_plays_fresh_ones(monkeypatch):
    config = TrainConfig(game="CartPole-v1", envs_per_worker=3, rollout_steps=5, max_steps=15)
    made = []

    def recording_make_env(game, seed=None, **options):
        made.append(seed)
        return real_make_env(game, seed=seed, **options)

    real_make_env = worker_loop.make_env
    monkeypatch.setattr(worker_loop, "make_env", recording_make_env)
    shared = ActorCritic((4,), 2, hidden_size=8).share_memory()
    optimizer = SharedAdam(shared.parameters(), lr=1e-3)
    for start in (0, 1):
        counter, updates = mp.get_context("fork").Value("q", 0), mp.get_context("fork").Value("q", 0)
        link = SharedMemoryLink(
            config, shared, optimizer, threading.Event(), counter, updates, queue.Queue()
        )
        worker_loop.worker_loop(2, config, link, start=start)
    first, restarted = made[:3], made[3:]
    assert first == seeds.worker_seeds(config.seed, 2, 3).envs
    assert restarted == seeds.worker_seeds(config.seed, 2, 3, start=1).envs
    assert not set(first) & set(restarted)


def test_evaluation_rounds_use_the_derived_seeds():
    config = TrainConfig(game="CartPole-v1", seed=5)
    assert [eval_seed(config, k) for k in range(3)] == [
        seeds.evaluation_seed(5, k) for k in range(3)
    ]


def test_the_start_record_counts_each_workers_starts():
    assert seeds.start_number([], 3) == 0 and seeds.start_number([2, 5], 1) == 5
    assert seeds.next_starts([], range(2)) == [1, 1]
    assert seeds.next_starts([1, 1], [1]) == [1, 2]  # worker 1 replaced
    assert seeds.next_starts([2], range(3)) == [3, 1, 1]  # a resumed run with more workers


def test_a_resumed_run_plays_fresh_seeds_in_its_workers_and_its_evaluations(tmp_path, monkeypatch):
    """Each session of a run (train, then train --resume) plays its own environment and evaluation
    seeds: the checkpoint keeps the workers' next start numbers and the rounds go on counting."""
    played = tmp_path / "played.txt"  # forked workers and evaluator append here

    def note(line: str) -> None:
        with played.open("a") as file:
            file.write(line + "\n")

    def recording_make_env(game, seed=None, **options):
        note(f"env {seed}")
        return real_make_env(game, seed=seed, **options)

    def recording_eval_seed(config, round_index):
        note(f"round {round_index}")
        return real_eval_seed(config, round_index)

    real_make_env, real_eval_seed = worker_loop.make_env, evaluate_module.eval_seed
    monkeypatch.setattr(worker_loop, "make_env", recording_make_env)
    monkeypatch.setattr(evaluate_module, "eval_seed", recording_eval_seed)
    config = TrainConfig(
        game="CartPole-v1", workers=2, envs_per_worker=2, seed=7, eval_interval_s=0.4,
        eval_episodes=1, eval_mode="live", out_dir=str(tmp_path / "run"),
    )  # fmt: skip
    sessions = []
    for session, resume in enumerate((False, True)):
        played.write_text("")
        train(config.replace(max_minutes=0.025, max_steps=None), progress=False, resume=resume)
        lines = played.read_text().split("\n")
        sessions.append(({int(x[4:]) for x in lines if x.startswith("env")},
                         {int(x[6:]) for x in lines if x.startswith("round")}))  # fmt: skip
        starts = load_checkpoint(tmp_path / "run" / "checkpoint.pt").metadata["worker_starts"]
        assert starts == [session + 1, session + 1]
    for session, (envs, rounds) in enumerate(sessions):
        expected = {s for w in range(2) for s in seeds.worker_seeds(7, w, 2, session).envs}
        assert envs == expected, f"session {session}'s workers"
        assert rounds, f"session {session} evaluated nothing"
    assert not sessions[0][0] & sessions[1][0]
    assert min(sessions[1][1]) > max(sessions[0][1])  # the second session's rounds are new ones
