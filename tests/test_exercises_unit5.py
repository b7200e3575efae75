"""Unit 5 exercise checks: correct answers pass, stubs are NOT ATTEMPTED, and the likely mistakes
(staleness counted after the update, updates never counted, no optimizer step, the larger limit
taken instead of the smaller) fail with a message that says what differs."""

import pytest

from a3c_course.lessons.exercises import unit5
from a3c_course.lessons.exercises.solutions import solution_object
from a3c_course.lessons.exercises.solutions.unit5 import ParameterServer


class CountsAfterTheUpdate(ParameterServer):
    def push(self, grads, pulled_at, steps):
        for param, grad in zip(self.model.parameters(), grads, strict=True):
            param.grad = grad
        self.optimizer.step()
        self.updates += 1
        self.steps += steps
        return self.updates - pulled_at


class NeverCountsUpdates(ParameterServer):
    def push(self, grads, pulled_at, steps):
        for param, grad in zip(self.model.parameters(), grads, strict=True):
            param.grad = grad
        self.optimizer.step()
        self.steps += steps
        return self.updates - pulled_at


class NoStep(ParameterServer):
    def push(self, grads, pulled_at, steps):
        staleness = self.updates - pulled_at
        self.updates += 1
        self.steps += steps
        return staleness


class Stub(ParameterServer):
    def push(self, grads, pulled_at, steps):
        raise NotImplementedError


@pytest.mark.parametrize("exercise_id", ["5.1", "5.2"])
def test_the_solutions_pass(exercise_id, capsys):
    check = {"5.1": unit5.check_parameter_server, "5.2": unit5.check_workers_one_server_feeds}
    assert check[exercise_id](solution_object(exercise_id))
    assert capsys.readouterr().out.startswith(f"PASSED [{exercise_id}]")


@pytest.mark.parametrize(
    "server, message",
    [
        (Stub, "NOT ATTEMPTED [5.1]"),
        (CountsAfterTheUpdate, "one too many each time: compute it before counting this update"),
        (NeverCountsUpdates, "never above 0: is self.updates counted at each push?"),
        (NoStep, "the weights differ from Adam's after the same 4 gradients"),
    ],
)
def test_a_wrong_server_fails_saying_why(server, message, capsys):
    assert not unit5.check_parameter_server(server)
    assert message in capsys.readouterr().out


def test_the_larger_limit_fails_the_scaling_check(capsys):
    def larger(apply_s, reply_s, model_bytes, worker_steps_per_s, steps_per_update, gbit_per_s):
        compute, network = 1 / (apply_s + reply_s), gbit_per_s * 1e9 / 8 / model_bytes
        return max(compute, network) / (worker_steps_per_s / steps_per_update)

    assert not unit5.check_workers_one_server_feeds(larger)
    out = capsys.readouterr().out
    assert "a slow link (1 Gbit/s binds)" in out
    assert "likely cause: " in out and "the first ceiling reached binds: take the smaller" in out


def feeds(bits_per_byte=8, per_update=True, reply=True, link_ways=1, whole=False):
    """5.2 written with one known mistake (each argument's default is the right choice)."""

    def workers_one_server_feeds(apply_s, reply_s, model_bytes, steps_per_s, steps_per_update, gbit):
        compute = 1 / (apply_s + (reply_s if reply else 0.0))
        network = gbit * 1e9 / bits_per_byte / (model_bytes * link_ways)
        workers = min(compute, network) / (steps_per_s / (steps_per_update if per_update else 1))
        return int(workers) if whole else workers

    return workers_one_server_feeds


@pytest.mark.parametrize(
    ("wrong", "cause"),
    [
        (feeds(bits_per_byte=1), "the link's speed is in bits a second: divide"),
        (feeds(per_update=False), "a worker sends one update every steps_per_update agent steps"),
        (feeds(reply=False), "the server spends apply_s + reply_s on each update"),
        (feeds(link_ways=2), "a link is full duplex"),
        (feeds(whole=True), "return the number as it comes (23.8 workers, say), not rounded"),
    ],
    ids=["bits for bytes", "steps for updates", "apply only", "link both ways", "whole workers"],
)
def test_the_scaling_check_names_the_likely_cause(wrong, cause, capsys):
    assert feeds()(2e-3, 1e-3, 600_000, 1_400, 160, 1.0) == pytest.approx(23.8095, rel=1e-4)
    assert not unit5.check_workers_one_server_feeds(wrong)
    assert f"likely cause: {cause}" in capsys.readouterr().out


def test_a_wrong_number_is_shown_without_an_index(capsys):
    assert not unit5.check_workers_one_server_feeds(feeds(link_ways=2))
    out = capsys.readouterr().out
    assert "got 11.9048, expected 23.8095" in out and "index" not in out
