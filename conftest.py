"""Any pytest run (unit tests or `pytest --nbval notebooks/`) runs the notebooks in fast mode.

Notebook kernels inherit this process's environment, so setting the variable here is enough.
"""

import os

import torch

os.environ["A3C_COURSE_FAST"] = "1"

# Two pytest workers share two cores. With torch's default of one intra-op thread per core, each
# small op of one worker waits on a thread that the other worker's process holds: one Breakout game
# of the shipped agent took 15 s beside another test instead of 2 s alone. One thread per test
# process (its children and the notebooks' kernels choose their own).
torch.set_num_threads(1)

# The files (xdist's --dist loadscope units) that take longest, longest first: each file's time on
# two cores, 2026-12-07 (tools/test_durations.py prints them). Sent first, they no longer leave one
# worker busy while the other idles at the end; every other file keeps its place after them.
SLOWEST_FIRST = [
    "tests/test_cluster.py",
    "tests/test_throughput.py",
    "tests/test_browser.py",
    "notebooks/04_async_training.ipynb",
    "tests/test_editions.py",
    "notebooks/05_beyond_one_machine.ipynb",
    "tests/test_ray_runs.py",
    "tests/test_trainer.py",
    "tests/test_run_faults.py",
    "tests/test_runlock.py",
    "notebooks/01_env_preprocessing.ipynb",
    "tests/test_compare.py",
    "tests/test_cli.py",
    "tests/test_pretrained.py",
    "tests/test_widgets.py",
    "tests/test_evaluate.py",
]


def pytest_collection_modifyitems(config, items):
    rank = {path: place for place, path in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))  # stable
