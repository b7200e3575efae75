"""Helpers for the tests that watch processes: a process's descendants, and waiting for a state."""

import time

import psutil


def children_of(pid: int) -> list[psutil.Process]:
    """Every descendant of process pid (none once it is gone)."""
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def wait_for(condition, timeout: float = 90.0) -> None:
    """Poll condition() until it is true; fail after timeout seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)
