"""The Ray backend (training/ray_backend.py) on this machine's own Ray: its parameter server against
an independent optimizer, Ctrl-C leaving no Ray process behind, and a run that fails to start
shutting down the Ray it started. (The runs on a simulated two-node cluster are in test_cluster.py;
apart, so that the two files' slow tests can run in two pytest workers.)"""

import os
import signal
import subprocess
import sys
import textwrap
import time

import psutil
import pytest
import torch

ray = pytest.importorskip("ray")

import test_trainer  # noqa: E402  (tests/ is on sys.path)

from a3c_course.a3c.model import ActorCritic  # noqa: E402
from a3c_course.training import ray_backend as cluster  # noqa: E402
from a3c_course.training.checkpoint import load_checkpoint  # noqa: E402
from a3c_course.training.config import TrainConfig  # noqa: E402
from a3c_course.training.parameter_server import ParameterServer  # noqa: E402
from a3c_course.training.trainer import train  # noqa: E402

CARTPOLE = dict(test_trainer.CARTPOLE, backend="ray")  # the Hogwild backend's test settings


def random_grads(model, seed):
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(p.shape, generator=generator) for p in model.parameters()]


def test_the_server_applies_each_gradient_on_arrival_and_counts_its_staleness():
    """In this process, no Ray: the server's weights after three pushes are those of
    torch.optim.Adam stepping the same gradients in the same order; A and B pulled the same
    weights, so B's gradient is one update stale, and A's next one too (its weights came with
    the reply to its first push, before B's update)."""
    config = TrainConfig(game="CartPole-v1", lr=1e-2)
    torch.manual_seed(0)
    model = ActorCritic((4,), 2, hidden_size=8)
    weights = [p.detach().clone() for p in model.parameters()]
    server = ParameterServer(config, model.architecture, weights, None, steps=0)
    reference = ActorCritic((4,), 2, hidden_size=8)
    reference.load_state_dict(model.state_dict())
    adam = torch.optim.Adam(reference.parameters(), lr=config.lr)

    a_pulled_at = b_pulled_at = server.pull()[0]
    reply_to_a, staleness_a = server.push(random_grads(model, 1), a_pulled_at, 160)
    _, staleness_b = server.push(random_grads(model, 2), b_pulled_at, 160)
    _, staleness_a2 = server.push(random_grads(model, 3), reply_to_a[0], 160)
    for seed in (1, 2, 3):
        for p, g in zip(reference.parameters(), random_grads(model, seed), strict=True):
            p.grad = g
        adam.step()

    assert (staleness_a, staleness_b, staleness_a2) == (0, 1, 1)
    assert server.staleness_counts() == [0, 1, 1]
    updates, final, steps, stopping = server.pull()
    assert (updates, steps, stopping) == (3, 480, False)
    for p, q in zip(final, reference.parameters(), strict=True):
        torch.testing.assert_close(p, q.detach())


def test_gradients_and_weights_travel_flat_and_arrive_unchanged():
    """to_wire / from_wire on the Pong network (its convolutions' weights are channels_last, not
    contiguous in the parameters' own order): every value comes back in its place, and the
    server actor (called directly, no Ray) takes a flat gradient and answers with flat weights
    equal to the plain server's."""
    config = TrainConfig(game="pong")
    torch.manual_seed(0)
    model = ActorCritic((1, 42, 42), 6)
    params = list(model.parameters())
    assert any(not p.is_contiguous() for p in params)  # channels_last, as in training
    back = cluster.from_wire(cluster.to_wire(params), params)
    assert [b.shape for b in back] == [p.shape for p in params]
    for b, p in zip(back, params, strict=True):
        torch.testing.assert_close(b, p.detach(), rtol=0, atol=0)

    weights = [p.detach().clone() for p in params]
    grads = random_grads(model, 1)
    plain = ParameterServer(config, model.architecture, weights, None, steps=0)
    actor = cluster.ServerActor(config, model.architecture, weights, None, steps=0)
    (version, expected, *_), _ = plain.push(grads, 0, 160)
    (actor_version, flat, *_), staleness = actor.push(cluster.to_wire(grads), 0, 160)
    assert (actor_version, staleness) == (version, 0) == (1, 0)
    for got, want in zip(cluster.from_wire(flat, params), expected, strict=True):
        torch.testing.assert_close(got, want, rtol=0, atol=0)
    assert not torch.equal(expected[0], weights[0])  # the step moved the weights


# -- Ctrl-C: the run starts its own Ray ---------------------------------------------------------

INTERRUPTED_RUN = """
import signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)  # a background job starts with it ignored
from a3c_course.training.config import TrainConfig
from a3c_course.training.trainer import train
config = TrainConfig(**{config!r})
print("stop reason:", train(config, progress=False).stop_reason, flush=True)
"""


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_ctrl_c_stops_the_run_and_leaves_no_ray_process_behind(tmp_path):
    """Ctrl-C in a terminal reaches the whole process group: Ray's own processes too."""
    config = dict(CARTPOLE, max_minutes=5.0, out_dir=str(tmp_path))
    script = textwrap.dedent(INTERRUPTED_RUN.format(config=config))
    run = subprocess.Popen(
        [sys.executable, "-c", script],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )
    metrics = tmp_path / "metrics.jsonl"
    deadline = time.monotonic() + 120
    while not (metrics.is_file() and metrics.read_text().count('"episode"') >= 5):
        assert run.poll() is None and time.monotonic() < deadline, run.stdout.read()
        time.sleep(0.5)
    started = psutil.Process(run.pid).children(recursive=True)
    assert len(started) >= 4  # Ray's own services and the run's actors
    os.killpg(run.pid, signal.SIGINT)
    output, _ = run.communicate(timeout=90)
    assert run.returncode == 0, output
    assert "stop reason: interrupted" in output
    _, alive = psutil.wait_procs(started, timeout=30)
    assert alive == [], [p.cmdline() for p in alive]
    assert load_checkpoint(tmp_path / "checkpoint.pt").metadata["stop_reason"] == "interrupted"


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_run_that_fails_to_start_shuts_down_the_ray_it_started(tmp_path, monkeypatch):
    assert not ray.is_initialized()  # before this module's cluster starts

    def fail(*args, **kwargs):
        raise RuntimeError("no scheduling here")

    monkeypatch.setattr(cluster, "NodeAffinitySchedulingStrategy", fail)
    with pytest.raises(RuntimeError, match="no scheduling here"):
        train(TrainConfig(**CARTPOLE, max_steps=1_000, out_dir=str(tmp_path)), progress=False)
    assert not ray.is_initialized()
