"""The Ray backend (training/ray_backend.py) in whole runs on a simulated two-node cluster on this
machine (ray.cluster_utils.Cluster): CartPole learnt (to a lower bar than the Hogwild backend's
test) though a worker is killed and replaced on the way, the parameter server lost, checkpoints
moving between the backends, and the server's share of a push measured. (The server alone and
Ctrl-C: test_ray_runs.py.)"""

import time

import pytest
import torch

ray = pytest.importorskip("ray")

import test_trainer  # noqa: E402  (tests/ is on sys.path)
from ray.cluster_utils import Cluster  # noqa: E402
from test_ray_runs import CARTPOLE  # noqa: E402  the Hogwild backend's test settings, on Ray

from a3c_course.cli.main import main  # noqa: E402
from a3c_course.training.checkpoint import load_checkpoint  # noqa: E402
from a3c_course.training.config import TrainConfig  # noqa: E402
from a3c_course.training.evaluate import evaluate  # noqa: E402
from a3c_course.training.run_record import WorkerError  # noqa: E402
from a3c_course.training.trainer import train  # noqa: E402

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
def test_two_worker_actors_on_two_nodes_learn_cartpole_though_one_is_killed(two_nodes, tmp_path):
    """The Hogwild backend's test (test_trainer.test_two_workers_learn_cartpole): the same settings
    and budgets, to a lower bar: a mean of 100 over 20 games (a random policy scores about 22; the
    Hogwild test's 195 took three to four times the agent steps, and the Ray path runs at a third of
    Hogwild's speed on two cores). On the way, worker 0's actor is killed; a new one takes its place."""
    learns = {**test_trainer.LEARNS_CARTPOLE, "target_score": 100.0}
    killed = []

    def kill_worker_0(result):
        if not killed and result.steps >= 2_000:
            ray.kill(named_actor("-worker-0"), no_restart=True)
            killed.append(result.steps)

    config = TrainConfig(**CARTPOLE, **learns, out_dir=str(tmp_path))
    result = train(config, on_metrics=kill_worker_0, progress=False)
    assert result.stop_reason == "target_score", (result.steps, result.recent_score())
    assert result.notes()[0] == (
        "2 worker actor(s) on 2 Ray node(s); the parameter server on this machine"
    )
    assert killed and (
        "worker 0 was lost (ActorDiedError); a new one took its place, with fresh seeds"
        in result.notes()
    )
    note = next(r for r in result.history if r.get("message", "").startswith("worker 0 was lost"))
    later = [r for r in result.history if r["kind"] == "loss" and r["steps"] > note["steps"]]
    assert {r["worker"] for r in later} == {0, 1}  # the new worker 0 trains
    assert result.mean_staleness() > 0  # two workers: each push finds the other's updates
    checkpoint = load_checkpoint(result.checkpoint, expect_game="CartPole-v1")
    assert checkpoint.metadata["steps"] == result.steps
    assert checkpoint.metadata["worker_starts"] == [2, 1]  # the replacement's start 1: fresh seeds


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
