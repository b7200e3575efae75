"""Every random seed of a training run, derived from its one run seed so that two runs share none.

    run seed -> the initial network's torch seed
             -> worker w, its i-th start: its torch seed, and one seed per environment
             -> evaluation round k: the seed of its first game (game j plays seed + j)

Adding offsets to the run seed (seed + 1 + w * envs + e) made run seeds 0, 1 and 2 share almost all
their environments, a worker's torch seed and 9 of every round's 10 evaluation games: three "seeds"
that were nearly one run. Here numpy's SeedSequence hashes the run seed together with what the seed
is for (a path such as (WORKER, w, i)) into 62-bit numbers: independent streams for any two runs
or purposes, as numpy's own parallel generators are spawned.

A worker that is replaced (a lost Ray actor) starts again with its start count i + 1, and so with
fresh seeds: it does not replay its predecessor's games. A resumed run goes on counting: the
checkpoint keeps each worker's next start number, so a second session plays new games too.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

import numpy as np

# What a seed is for: the first number of its SeedSequence path.
NETWORK, WORKER, EVALUATION = 0, 1, 2


def _draw(seed: int, path: tuple[int, ...], count: int) -> list[int]:
    """count 62-bit seeds from the run seed and a path (what they are for)."""
    words = np.random.SeedSequence(seed, spawn_key=path).generate_state(count, dtype=np.uint64)
    return [int(word) >> 2 for word in words]  # seed + j stays a non-negative int64


class WorkerSeeds(NamedTuple):
    """A worker's seeds: torch's (its action sampling) and one per environment."""

    torch: int
    envs: list[int]


def network_seed(seed: int) -> int:
    """The torch seed of the run's initial network."""
    return _draw(seed, (NETWORK,), 1)[0]


def worker_seeds(seed: int, worker_id: int, envs: int, start: int = 0) -> WorkerSeeds:
    """Worker `worker_id`'s seeds at its start number `start` (0; 1, 2, ... once replaced)."""
    torch_seed, *env_seeds = _draw(seed, (WORKER, worker_id, start), 1 + envs)
    return WorkerSeeds(torch_seed, env_seeds)


def evaluation_seed(seed: int, round_index: int) -> int:
    """The first game's seed of evaluation round `round_index` (game j plays this + j)."""
    return _draw(seed, (EVALUATION, round_index), 1)[0]


def start_number(starts: Sequence[int], worker_id: int) -> int:
    """Worker `worker_id`'s next start number in a run's record of them (0: never started)."""
    return starts[worker_id] if worker_id < len(starts) else 0


def next_starts(starts: Sequence[int], started: Iterable[int]) -> list[int]:
    """The record after the workers in `started` have each started once more."""
    started = set(started)
    size = max([len(starts), *(worker_id + 1 for worker_id in started)])
    return [start_number(starts, w) + (w in started) for w in range(size)]
