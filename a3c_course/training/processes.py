"""What every child process of a training run does on this machine, whoever started it.

child_setup: one intra-op thread, Ctrl-C left to the parent. StopOrOrphaned: the parent's stop
event, also set once the parent has died. report_crash: the traceback to the parent, exit status 1.
And on the parent's side, sigint_ignored: a block that a second Ctrl-C cannot cut short, and
stop_children: wait for children to finish, then end the stragglers, so that none outlives its run.
The Hogwild backend's workers and evaluator (hogwild.py), the snapshot scorers (evaluate.py) and
notebook 04's probes use them; Ray's actors (ray_backend.py) have Ray's own versions of these.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable

import torch


def child_setup() -> None:
    """First thing in every child process: one thread, and leave Ctrl-C to the parent.

    One intra-op thread per process: the workers already use every core, more threads only fight
    over them (and a forked child of a parent that used a thread pool can hang in it). Ctrl-C in a
    terminal reaches every process of the group; the parent stops the children in order instead.
    """
    torch.set_num_threads(1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class StopOrOrphaned:
    """The parent's stop event, also set once the parent process has died.

    A parent killed outright (SIGKILL, out of memory) cannot set the event; without this check its
    children would train on alone, with nobody to read their results or to stop them.
    """

    def __init__(self, stop_event):
        self.stop_event, self.parent = stop_event, os.getppid()

    def orphaned(self) -> bool:
        return os.getppid() != self.parent

    def is_set(self) -> bool:
        return self.stop_event.is_set() or self.orphaned()

    def wait(self, timeout: float) -> bool:
        """Like Event.wait, checking on the parent every second."""
        deadline = time.monotonic() + timeout
        while not self.stop_event.wait(min(1.0, max(0.0, deadline - time.monotonic()))):
            if self.orphaned():
                return True
            if time.monotonic() >= deadline:
                return False
        return True


def report_crash(queue, worker_id: int | str) -> None:
    """Send the current exception's traceback to the parent, then exit with status 1."""
    queue.put({"kind": "error", "worker": worker_id, "traceback": traceback.format_exc()})
    queue.close()
    queue.join_thread()  # make sure the message left this process before it exits
    sys.exit(1)


class sigint_ignored:
    """Ignore Ctrl-C inside the block (only possible in the main thread; elsewhere a no-op): the
    parent's stopping of its children cannot be cut short and leave some behind."""

    def __enter__(self):
        self.previous = None
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        return self

    def __exit__(self, *exc):
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)
        return False


def stop_children(children: list, timeout: float, while_waiting: Callable[[], None]) -> None:
    """Give children (already told to stop) timeout seconds to exit, calling while_waiting meanwhile
    (it must not block for long: e.g. read what they still send, as a child cannot exit while its
    queued messages are unread); then terminate, and at last kill, any still alive."""
    deadline = time.monotonic() + timeout
    while any(child.is_alive() for child in children) and time.monotonic() < deadline:
        while_waiting()
    for child in children:
        if child.is_alive():
            child.terminate()
            child.join(2.0)
        if child.is_alive():
            child.kill()
            child.join(2.0)
