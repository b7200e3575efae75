"""The Ray backend (training/ray_backend.py): its parameter server against an independent optimizer, then whole
runs on a simulated two-node cluster on this machine (ray.cluster_utils.Cluster): CartPole learnt
as by the Hogwild backend's test, a killed worker replaced, the parameter server lost, checkpoints
moving between the backends, and Ctrl-C leaving no Ray process behind."""

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
from ray.cluster_utils import Cluster  # noqa: E402

from a3c_course.a3c.model import ActorCritic  # noqa: E402
from a3c_course.cli.main import main  # noqa: E402
from a3c_course.training import ray_backend as cluster  # noqa: E402
from a3c_course.training.checkpoint import load_checkpoint  # noqa: E402
from a3c_course.training.config import TrainConfig  # noqa: E402
from a3c_course.training.evaluate import evaluate  # noqa: E402
from a3c_course.training.parameter_server import ParameterServer  # noqa: E402
from a3c_course.training.run_record import WorkerError  # noqa: E402
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


# -- Ctrl-C: first, before this module's cluster starts; the run starts its own Ray --------------

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


# -- on a two-node cluster ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def two_nodes():
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, log_to_driver=False)
    yield cluster
    ray.shutdown()
    cluster.shutdown()


def named_actor(suffix):
    names = [name for name in ray.util.list_named_actors() if name.endswith(suffix)]
    assert len(names) == 1, names
    return ray.get_actor(names[0])


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_two_worker_actors_on_two_nodes_learn_cartpole(two_nodes, tmp_path):
    """The Hogwild backend's test (test_trainer.test_two_workers_learn_cartpole): the same settings,
    threshold and budgets."""
    config = TrainConfig(**CARTPOLE, **test_trainer.LEARNS_CARTPOLE, out_dir=str(tmp_path))
    result = train(config, progress=False)
    assert result.stop_reason == "target_score", (result.steps, result.recent_score())
    assert result.notes()[0] == (
        "2 worker actor(s) on 2 Ray node(s); the parameter server on this machine"
    )
    assert result.mean_staleness() > 0  # two workers: each push finds the other's updates
    checkpoint = load_checkpoint(result.checkpoint, expect_game="CartPole-v1")
    assert checkpoint.metadata["steps"] == result.steps


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_a_killed_worker_is_replaced_and_the_run_goes_on(two_nodes, tmp_path):
    killed = []

    def kill_worker_0(result):
        if not killed and result.steps >= 2_000:
            ray.kill(named_actor("-worker-0"), no_restart=True)
            killed.append(result.steps)

    config = TrainConfig(**CARTPOLE, max_steps=40_000, out_dir=str(tmp_path))  # time to restart
    result = train(config, on_metrics=kill_worker_0, progress=False)
    assert killed and result.stop_reason == "max_steps"
    assert (
        "worker 0 was lost (ActorDiedError); a new one took its place, with fresh seeds"
        in result.notes()
    )
    note = next(r for r in result.history if r.get("message", "").startswith("worker 0 was lost"))
    later = [r for r in result.history if r["kind"] == "loss" and r["steps"] > note["steps"]]
    assert {r["worker"] for r in later} == {0, 1}  # the new worker 0 trains


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_losing_the_parameter_server_ends_the_run_with_a_clear_error(two_nodes, tmp_path):
    def kill_the_server(result):
        if result.steps >= 2_000:
            ray.kill(named_actor("-server"), no_restart=True)

    config = TrainConfig(**CARTPOLE, max_steps=200_000, out_dir=str(tmp_path))
    with pytest.raises(WorkerError, match="the parameter server was lost") as error:
        train(config, on_metrics=kill_the_server, progress=False)
    assert error.value.result.stop_reason == "worker_failed"
    checkpoint = load_checkpoint(tmp_path / "checkpoint.pt")
    assert checkpoint.metadata["stop_reason"] == "worker_failed"
    assert checkpoint.metadata["steps"] >= 2_000
    deadline = time.monotonic() + 15
    while [n for n in ray.util.list_named_actors() if n.startswith("a3c-")]:  # killed, going
        assert time.monotonic() < deadline, ray.util.list_named_actors()
        time.sleep(0.5)


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_a_checkpoint_moves_between_the_backends(two_nodes, tmp_path, capsys):
    """The command line on the cluster (--backend ray --address), the local tools on its
    checkpoint (evaluate), Hogwild resuming it (the saved address dropped), and Ray again."""
    out = str(tmp_path / "run")
    small = ["--game", "CartPole-v1", "--workers", "2", "--envs-per-worker", "8",
             "--rollout-steps", "10", "--hidden-size", "64", "--eval-episodes", "0",
             "--quiet", "--no-report", "--out", out]  # fmt: skip
    assert main(["train", "--backend", "ray", "--address", two_nodes.address, "--steps", "3000",
                 *small]) == 0  # fmt: skip
    first = load_checkpoint(tmp_path / "run" / "checkpoint.pt")
    assert first.config.backend == "ray" and first.config.ray_address == two_nodes.address
    assert len(evaluate(tmp_path / "run" / "checkpoint.pt", episodes=2).scores) == 2
    assert main(["train", "--resume", "--backend", "hogwild", "--steps", "6000", *small]) == 0
    local = load_checkpoint(tmp_path / "run" / "checkpoint.pt")
    assert local.config.backend == "hogwild" and local.config.ray_address is None
    again = train(local.config.replace(backend="ray", max_steps=9_000), progress=False, resume=True)
    assert first.metadata["steps"] >= 3_000 and local.metadata["steps"] >= 6_000
    assert again.steps >= 9_000
    steps = [r["steps"] for r in again.history if r["kind"] == "episode"]
    assert min(steps) < 3_000 < 6_000 < max(steps)  # one history across the three sessions
    optimizer_state = torch.load(tmp_path / "run" / "optimizer.pt", weights_only=False)
    assert float(next(iter(optimizer_state["state"].values()))["step"]) > 0


def test_the_server_share_of_a_push_is_measured_on_the_running_ray(two_nodes):
    """measure_server_costs with a Ray already up (a notebook's): a push's round trip and the
    server actor's own CPU time per push are both measured, and the Ray it found stays up."""
    from a3c_course.measure.scaling import ScalingModel, measure_server_costs

    config = TrainConfig(**CARTPOLE)
    costs = measure_server_costs(config, updates=20)
    assert costs["round_trip_s"] > 0 and costs["server_push_s"] > 0, costs
    assert ray.is_initialized()
    model = ScalingModel.from_costs(costs, 1_000.0, config)
    in_process = costs["apply_s"] + costs["reply_s"]
    assert model.ray_s == pytest.approx(max(0.0, costs["server_push_s"] - in_process))
