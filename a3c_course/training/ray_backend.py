"""The Ray backend: A3C across machines around one parameter server (Gorila's design) and N workers.

    a3c-course train --backend ray --workers 8                  # Ray started on this machine
    a3c-course train --backend ray --address auto --workers 32  # a cluster (`ray start --head`)

The Hogwild backend (hogwild.py) shares one model through this machine's memory. Machines share no
memory, so here one actor, the parameter server, holds the network and the optimizer, and each
worker actor, on whatever machine Ray places it, loops (worker_loop.worker_loop, the same loop):

    pull the latest weights -> collect one rollout -> its clipped gradient -> push it

The server applies each gradient the moment it arrives (asynchronous: no barrier, no averaging)
and answers with the weights after the step, so the next pull costs no extra round trip. A
gradient is stale by the updates that other workers' gradients made between its pull and its
push; the server counts that staleness and each worker reports it with its losses.

The parent (trainer._Run, shared by both backends) sees what it sees with Hogwild: records (the
workers' episodes and losses and the evaluator's scores, which travel through the server), the
step count, a child that failed, the latest weights for checkpoints. What differs:
- a worker actor that dies (killed, its machine lost) is replaced, and the run records a note;
- the parameter server lost ends the run (WorkerError) after saving the parent's copy of its
  weights (refreshed every REFRESH_S seconds, and at every checkpoint);
- the server and the evaluator run on this machine (the evaluator writes best.pt into out_dir);
  the workers are spread over the cluster's machines;
- stopping kills every actor the run started, and shuts Ray down if the run started it.

Ray is an optional extra: `pip install "a3c-course[cluster]"`. Every machine of a cluster needs the
course installed, as this one.
"""

from __future__ import annotations

import inspect
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from a3c_course.a3c.model import ActorCritic
from a3c_course.training.checkpoint import BEST_CHECKPOINT_NAME as BEST_NAME
from a3c_course.training.checkpoint import best_eval_mean
from a3c_course.training.config import RAY_MISSING, TrainConfig
from a3c_course.training.evaluate import evaluation_loop
from a3c_course.training.parameter_server import ParameterServer, copy_weights, load_weights
from a3c_course.training.processes import sigint_ignored
from a3c_course.training.seeds import next_starts, start_number
from a3c_course.training.worker_loop import worker_loop

try:
    import ray
    from ray.exceptions import GetTimeoutError, RayActorError, RayTaskError
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
except ImportError as error:  # pragma: no cover - the message is the point
    raise ImportError(RAY_MISSING) from error

JOIN_TIMEOUT_S = 10.0  # time the actors get to finish their loop before they are killed
STOP_CHECK_S = 0.5  # how often a link without fresh replies asks the server whether to stop
REFRESH_S = 5.0  # how often the parent copies the server's weights while the run goes on
START_TIMEOUT_S = 120.0  # for the worker actors to come up
MAX_RESTARTS = 10  # lost actors replaced in one run; one more ends it (something is wrong)


def to_wire(tensors: Iterable[torch.Tensor]) -> np.ndarray:
    """The tensors' values in one flat numpy array: how gradients and weights travel between the
    workers and the server. Ray sends a numpy array's bytes as they are; a list of tensors is
    pickled tensor by tensor, which made a round trip about twice as long (benchmarks/README.md,
    *Gradients and weights as one flat array*)."""
    return torch.cat([t.detach().reshape(-1) for t in tensors]).numpy()


def from_wire(flat: np.ndarray, like: Iterable[torch.Tensor]) -> list[torch.Tensor]:
    """to_wire's array as tensors shaped as like's (a copy: an array Ray delivers is read-only)."""
    shapes = [t.shape for t in like]
    values = torch.tensor(flat).split([shape.numel() for shape in shapes])
    return [value.view(shape) for value, shape in zip(values, shapes, strict=True)]


class ServerActor(ParameterServer):
    """The parameter server as a Ray actor: one intra-op thread, as every process of a run; the
    gradients it takes and the weights it answers with travel flat (to_wire)."""

    def __init__(self, *args, **kwargs):
        torch.set_num_threads(1)
        super().__init__(*args, **kwargs)

    def pull(self) -> tuple:
        updates, weights, steps, stopping = super().pull()
        return updates, to_wire(weights), steps, stopping

    def push(self, grad: np.ndarray, pulled_at: int, steps: int) -> tuple:
        return super().push(from_wire(grad, self.model.parameters()), pulled_at, steps)


class ServerLink:
    """A worker's (or the evaluator's) link (worker.ParameterLink) to the parameter server.

    push sends the gradient and takes the reply's weights; the next pull uses them, so a worker
    makes one round trip per rollout. Records are posted without waiting: Ray runs one caller's
    calls to an actor in the order they were made, so they arrive before the caller's next push.
    """

    def __init__(self, server, architecture: dict[str, Any]):
        self.server, self.architecture = server, architecture
        self.weights: np.ndarray | None = None  # fresh from the last reply, not yet pulled
        self.pulled_at, self._steps, self._stopping = 0, 0, False
        self.checked = -float("inf")  # when the stop flag was last heard

    def _take(self, reply: tuple) -> None:
        self.pulled_at, self.weights, self._steps, self._stopping = reply
        self.checked = time.monotonic()

    def stopped(self) -> bool:
        if not self._stopping and time.monotonic() - self.checked > STOP_CHECK_S:
            self._stopping = ray.get(self.server.is_stopping.remote())
            self.checked = time.monotonic()
        return self._stopping

    def wait(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while not self.stopped() and time.monotonic() < deadline:
            time.sleep(min(STOP_CHECK_S, max(0.0, deadline - time.monotonic())))
        return self.stopped()

    @property
    def steps(self) -> int:
        return self._steps

    def pull(self, model: torch.nn.Module) -> None:
        if self.weights is None:
            self._take(ray.get(self.server.pull.remote()))
        load_weights(model, from_wire(self.weights, model.parameters()))
        self.weights = None

    def push(self, model: torch.nn.Module, steps: int) -> tuple[int, int]:
        grads = to_wire(p.grad for p in model.parameters())  # one flat array
        reply, staleness = ray.get(self.server.push.remote(grads, self.pulled_at, steps))
        self._take(reply)
        return self._steps, staleness

    def send(self, record: dict[str, Any]) -> None:
        self.server.post.remote(record)


class LoopActor:
    """One Ray actor that runs one of the course's loops against the parameter server: a worker's
    (worker_loop.worker_loop) or the evaluator's (evaluate.evaluation_loop)."""

    def __init__(self, config: TrainConfig, server, architecture: dict[str, Any]):
        torch.set_num_threads(1)  # one core per actor, as a Hogwild child process
        self.config, self.link = config, ServerLink(server, architecture)

    def node(self) -> str:
        """The id of the Ray node (machine) this actor runs on."""
        return ray.get_runtime_context().get_node_id()

    def work(self, worker_id: int, start: int) -> None:
        worker_loop(worker_id, self.config, self.link, start)

    def evaluate(self, best_mean: float | None, first_round: int) -> None:
        evaluation_loop(self.config, self.link, best_mean, first_round)


class RayBackend:
    """config.workers worker actors and one parameter server on a Ray cluster (see the module's
    docstring); the same interface as hogwild.HogwildBackend for trainer._Run."""

    def __init__(
        self,
        config: TrainConfig,
        model: ActorCritic,
        optimizer,
        steps: int = 0,
        starts: Sequence[int] = (),
    ):
        self.config = config
        # The actors' working folder may not be this one: give them an absolute out_dir.
        self.actor_config = config.replace(out_dir=str(Path(config.out_dir).resolve()))
        self.model = model  # with self.optimizer_saved: the weights and state last heard of
        self.optimizer_saved = optimizer.state_dict()
        self.started_ray = not ray.is_initialized()
        if self.started_ray:
            start_ray(config.ray_address)
        self.actors: list = []  # every actor this run started
        try:
            self._start_server(model, steps)
        except BaseException:  # the run will not start: leave nothing of it behind
            self.stopped = True
            self._kill_all()
            raise
        self._steps = steps
        self.loops: dict[Any, tuple[int | str, Any]] = {}  # a running loop's ref -> (who, actor)
        self.notes: list[dict[str, Any]] = []
        self.lost: str | None = None  # what happened to the parameter server
        self.stopped = False
        self.restarts = 0
        self.starts = list(starts)  # each worker's next start number: a replacement's, a
        # resumed run's fresh seeds (seeds.worker_seeds)
        self.next_round = 0  # the evaluator's next round (start() sets it): a replacement's first
        self.model_steps, self.refreshed_at = steps, time.monotonic()  # of self.model's weights

    def _start_server(self, model: ActorCritic, steps: int) -> None:
        self.node_id = ray.get_runtime_context().get_node_id()  # this machine's
        self.here = NodeAffinitySchedulingStrategy(node_id=self.node_id, soft=False)
        self.run_id = uuid.uuid4().hex[:8]  # names the run's actors: a3c-<run_id>-server, ...
        self.server = (
            ray.remote(ServerActor)
            .options(name=f"a3c-{self.run_id}-server", scheduling_strategy=self.here)
            .remote(
                self.actor_config,
                model.architecture,
                copy_weights(model),
                self.optimizer_saved,
                steps,
            )
        )
        self.actors.append(self.server)

    @property
    def worker_starts(self) -> list[int]:
        """Each worker's next start number (seeds.worker_seeds), for the checkpoint."""
        return self.starts

    @property
    def steps(self) -> int:
        return self._steps

    @property
    def architecture(self) -> dict[str, Any]:
        return self.model.architecture

    def _actor(self, name: str, scheduling_strategy):
        if self.restarts:
            name += f"-restart-{self.restarts}"  # a dead actor's name may not be free at once
        actor = (
            ray.remote(LoopActor)
            .options(name=f"a3c-{self.run_id}-{name}", scheduling_strategy=scheduling_strategy)
            .remote(self.actor_config, self.server, self.architecture)
        )
        self.actors.append(actor)  # stop() kills every one, whatever became of it
        return actor

    def start_worker(self, worker_id: int, actor=None) -> None:
        if actor is None:
            actor = self._actor(f"worker-{worker_id}", self.placement(worker_id))
        start = start_number(self.starts, worker_id)
        self.starts = next_starts(self.starts, [worker_id])
        self.loops[actor.work.remote(worker_id, start)] = (worker_id, actor)

    def placement(self, worker_id: int) -> NodeAffinitySchedulingStrategy:
        """Worker i on node i mod (the nodes with CPUs alive now, this one first): spread in
        turn over the machines (Ray's own "SPREAD" is a preference and may pack them); soft, so
        that a worker whose node has just gone lands on another."""
        nodes = [n["NodeID"] for n in ray.nodes() if n["Alive"] and n["Resources"].get("CPU", 0)]
        nodes.sort(key=lambda node: node != self.node_id)
        return NodeAffinitySchedulingStrategy(node_id=nodes[worker_id % len(nodes)], soft=True)

    def start_evaluator(self, best_mean: float | None, first_round: int) -> None:
        actor = self._actor("evaluator", self.here)  # on this machine: best.pt lands in out_dir
        self.loops[actor.evaluate.remote(best_mean, first_round)] = ("evaluator", actor)

    def start(
        self, live_evaluator: bool, best_mean: float | None = None, first_round: int = 0
    ) -> None:
        workers = [
            self._actor(f"worker-{i}", self.placement(i)) for i in range(self.config.workers)
        ]
        # Where they run, asked before their loops start (an actor runs one call at a time).
        try:
            nodes = set(
                ray.get([actor.node.remote() for actor in workers], timeout=START_TIMEOUT_S)
            )
        except GetTimeoutError:
            raise RuntimeError(
                f"the {len(workers)} worker actors did not all start within {START_TIMEOUT_S:g} s: "
                "does the cluster have a node with a CPU, and the course installed on every node?"
            ) from None
        for worker_id, actor in enumerate(workers):
            self.start_worker(worker_id, actor)
        self.next_round = first_round
        if live_evaluator:
            self.start_evaluator(best_mean, first_round)
        where = "this machine" if nodes == {self.node_id} else f"{len(nodes)} Ray node(s)"
        self.note(
            f"{len(workers)} worker actor(s) on {where}; the parameter server"
            + (" and the evaluator" if live_evaluator else "")
            + " on this machine"
        )

    def receive(self, timeout: float) -> list[dict[str, Any]]:
        """The records the server gathered (and the run's notes); waits timeout when there are none."""
        records, self.notes = self.notes, []
        if self.lost is None and not self.stopped:
            try:
                posted, self._steps = ray.get(self.server.drain.remote())
                records += posted
                self.next_round += sum(record["kind"] == "eval" for record in posted)
            except RayActorError as error:
                self.lost = (
                    f"the parameter server was lost ({type(error).__name__}); the checkpoint "
                    f"holds the weights it last sent, at {self.model_steps:,} steps"
                )
            if time.monotonic() - self.refreshed_at > REFRESH_S:
                self._refresh()  # what a lost server leaves: a recent copy of its weights
        if not records:
            time.sleep(timeout)
        return records

    def dead_child(self) -> str | None:
        """What ended the run: a loop that raised, or the server lost; None while all is well. A
        worker actor that died is replaced, with a note in the run's records."""
        if self.lost is not None:
            return self.lost
        if not self.loops:
            return None
        done, _ = ray.wait(list(self.loops), num_returns=len(self.loops), timeout=0)
        for ref in done:
            who, _actor = self.loops.pop(ref)
            name = who if who == "evaluator" else f"worker {who}"
            try:
                ray.get(ref)  # a worker that spent the step budget ends normally
            except RayTaskError as error:
                return f"{name} failed:\n{getattr(error, 'traceback_str', None) or error}"
            except RayActorError as error:
                if error.actor_init_failed or self.restarts >= MAX_RESTARTS:
                    return f"{name} was lost ({type(error).__name__}: {error})"
                self.note(
                    f"{name} was lost ({type(error).__name__}); a new one took its place, with fresh "
                    "seeds"
                )
                self.restarts += 1
                if who == "evaluator":  # past the round the lost one may have been playing
                    self.next_round += 1
                    self.start_evaluator(
                        best_eval_mean(Path(self.actor_config.out_dir) / BEST_NAME), self.next_round
                    )
                else:
                    self.start_worker(who)
        return None

    def note(self, message: str) -> None:
        self.notes.append({"kind": "note", "steps": self._steps, "message": message})

    def latest_model(self) -> ActorCritic:
        """The parent's copy of the network, refreshed from the server while it runs."""
        self._refresh()
        return self.model

    def optimizer_state(self) -> dict[str, Any]:
        """The optimizer's state that came with latest_model()'s weights (a checkpoint asks for
        both, in that order: one round trip to the server, not two)."""
        return self.optimizer_saved

    def _refresh(self) -> None:
        if self.lost is not None or self.stopped:
            return
        try:
            weights, self.optimizer_saved, self.model_steps = ray.get(self.server.state.remote())
        except RayActorError:
            return  # receive() says so; the last weights heard of are kept
        load_weights(self.model, weights)
        self.refreshed_at = time.monotonic()

    def stop(self, take: Callable[[list[dict[str, Any]]], None]) -> None:
        """Tell every loop to stop, wait for them, kill stragglers, keep the server's last weights,
        then kill every actor the run started (and shut Ray down if the run started it)."""
        with sigint_ignored():
            try:
                self._stop_loops(take)
                self._refresh()
            except Exception:  # noqa: BLE001 - Ray itself may be going: shut down regardless
                pass
            finally:
                self.stopped = True
                self._kill_all()

    def _kill_all(self) -> None:
        """Kill every actor the run started, and shut Ray down if the run started it."""
        for actor in self.actors:
            _kill(actor)
        if self.started_ray:
            _shutdown_ray()

    def _stop_loops(self, take) -> None:
        if self.lost is None:
            ray.get(self.server.stop.remote())
        deadline = time.monotonic() + JOIN_TIMEOUT_S
        while self.loops and time.monotonic() < deadline:
            done, _ = ray.wait(list(self.loops), num_returns=len(self.loops), timeout=0.05)
            for ref in done:
                del self.loops[ref]
            take(self.receive(0.0))
        take(self.receive(0.0))


def start_ray(address: str | None = None) -> None:
    """Join the cluster at address, or (None) start a new Ray on this machine, quietly."""
    ray.init(
        address=address or "local",  # "local": a new Ray, not one already running here
        include_dashboard=False,
        log_to_driver=False,
        configure_logging=False,
    )


def _shutdown_ray() -> None:
    """Stop the Ray this run started, and wait for its processes to exit where this Ray can."""
    wait = "wait_for_processes" in inspect.signature(ray.shutdown).parameters
    ray.shutdown(**({"wait_for_processes": True} if wait else {}))


def _kill(actor) -> None:
    try:
        ray.kill(actor, no_restart=True)
    except Exception:  # noqa: BLE001 - already gone
        pass
