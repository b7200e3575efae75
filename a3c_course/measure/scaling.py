"""A parameter server's limits on paper: how many workers one server can feed, from measured costs.

Each update moves one gradient to the server and one set of weights back (training/ray_backend.py), and costs
the server the time to apply the gradient and to copy the weights for the answer. One server
then saturates at the first of two limits:

    compute: 1 / (apply_s + reply_s + ray_s) updates/s
    network: link bytes/s / model_bytes updates/s (full duplex: gradients in and weights out
             travel in opposite directions, so each direction carries one model per update)

ray_s is Ray's part of the server's time: taking the call, deserialising the gradient and
serialising the answer. measure_server_costs measures it as the server actor's own CPU time per
push through Ray, less the apply and the copy; without it (ray_s 0) the model counts only the
in-process work, and its compute ceiling is an upper bound.

A worker makes worker_steps_per_s / steps_per_update updates/s, so the limit in workers is the
limit in updates/s divided by that, and the cluster's agent steps/s at saturation is the limit in
updates/s times steps_per_update.

What would raise the limits:
- k shards (each parameter on one of k servers, every worker talking to all of them): each shard
  applies and sends 1/k of the model, so both limits grow k times, assuming each shard has its
  own link (k shards behind one link share its bytes/s) and Ray's per-call cost splits k ways
  too (it does not quite: each shard takes a call per update);
- weights sent every m-th update instead of every one: the copy for the answer shrinks to 1/m
  (compute limit), but the gradients still arrive in full at every update, so the network limit
  does not move; the gradients' staleness grows, by up to m - 1 of the worker's own updates.

    model = ScalingModel(apply_s=2e-3, reply_s=1e-3, model_bytes=600_000,
                         worker_steps_per_s=1_400, steps_per_update=160)
    model.max_workers(gbit_per_s=1.0)     # where one server saturates on a 1 Gbit/s link
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import torch

from a3c_course.a3c.worker import apply_gradient
from a3c_course.training.config import TrainConfig
from a3c_course.training.parameter_server import ParameterServer


@dataclass(frozen=True)
class ScalingModel:
    apply_s: float  # the server's time to apply one gradient (measured)
    reply_s: float  # its time to copy the weights for the answer (measured)
    model_bytes: int  # one gradient, or one set of weights
    worker_steps_per_s: float  # one worker's agent steps/s (measured)
    steps_per_update: int  # envs_per_worker x rollout_steps
    shards: int = 1
    weights_every: int = 1  # the server answers with the weights every this many updates
    ray_s: float = 0.0  # the server's time per update for Ray's part of a push (measured, or 0)

    def __post_init__(self) -> None:
        for name in ("apply_s", "reply_s", "worker_steps_per_s"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)!r}")
        if not self.ray_s >= 0:
            raise ValueError(f"ray_s must be >= 0, got {self.ray_s!r}")
        for name in ("model_bytes", "steps_per_update", "shards", "weights_every"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {getattr(self, name)!r}")

    @classmethod
    def from_costs(
        cls, costs: dict[str, float], worker_steps_per_s: float, config: TrainConfig
    ) -> ScalingModel:
        """The model of config's network from measure_server_costs' output and one worker's speed;
        with the server's time per push through Ray (server_push_s), Ray's part is what it
        spends beyond the apply and the copy."""
        in_process = costs["apply_s"] + costs["reply_s"]
        return cls(
            apply_s=costs["apply_s"],
            reply_s=costs["reply_s"],
            model_bytes=int(costs["model_bytes"]),
            worker_steps_per_s=worker_steps_per_s,
            steps_per_update=config.envs_per_worker * config.rollout_steps,
            ray_s=max(0.0, costs.get("server_push_s", in_process) - in_process),
        )

    @property
    def updates_per_worker(self) -> float:
        """Updates/s one worker sends."""
        return self.worker_steps_per_s / self.steps_per_update

    @property
    def compute_limit(self) -> float:
        """Updates/s the server(s) can apply and answer."""
        per_update = self.apply_s + self.reply_s / self.weights_every + self.ray_s
        return self.shards / per_update

    def network_limit(self, gbit_per_s: float) -> float:
        """Updates/s the server's link carries (the gradients' direction: they arrive every time)."""
        if not gbit_per_s > 0:
            raise ValueError(f"gbit_per_s must be positive, got {gbit_per_s!r}")
        return self.shards * gbit_per_s * 1e9 / 8 / self.model_bytes

    def limit(self, gbit_per_s: float) -> float:
        """Updates/s at saturation: the smaller of the two limits."""
        return min(self.compute_limit, self.network_limit(gbit_per_s))

    def bottleneck(self, gbit_per_s: float) -> str:
        return "compute" if self.compute_limit <= self.network_limit(gbit_per_s) else "network"

    def max_workers(self, gbit_per_s: float) -> float:
        """Workers one server (or its shards) can feed before it saturates."""
        return self.limit(gbit_per_s) / self.updates_per_worker

    def max_steps_per_s(self, gbit_per_s: float) -> float:
        """The cluster's agent steps/s at saturation."""
        return self.limit(gbit_per_s) * self.steps_per_update

    def sharded(self, shards: int) -> ScalingModel:
        return replace(self, shards=shards)

    def sending_weights_every(self, updates: int) -> ScalingModel:
        return replace(self, weights_every=updates)


def limits_table(model: ScalingModel, gbits: tuple[float, ...] = (1.0, 10.0)) -> str:
    """A markdown table: one server, 4 shards and weights every 4th update, on each link speed:
    what binds, and the workers and agent steps/s at saturation."""
    variants = {
        "one server": model,
        "4 shards": model.sharded(4),
        "weights every 4th update": model.sending_weights_every(4),
    }
    lines = [
        "| server | link | binds first | workers at saturation | agent steps/s then |",
        "|---|---|---|---|---|",
    ]
    for name, variant in variants.items():
        for gbit in gbits:
            lines.append(
                f"| {name} | {gbit:g} Gbit/s | {variant.bottleneck(gbit)} | "
                f"{variant.max_workers(gbit):,.0f} | {variant.max_steps_per_s(gbit):,.0f} |"
            )
    return "\n".join(lines)


def seconds_each(call: Callable[[], object], times: int) -> float:
    """The mean wall time of `times` calls."""
    started = time.perf_counter()
    for _ in range(times):
        call()
    return (time.perf_counter() - started) / times


def measure_server_costs(config: TrainConfig, updates: int = 200, ray_round_trip: bool = True):
    """What a parameter server (training.parameter_server) spends per update on config's network:
    apply_s to apply one gradient, reply_s to copy the weights for the answer (both in this
    process); model_bytes, the size of one gradient or one set of weights. With ray_round_trip
    (on the Ray already running, else one started for it; ray_push_costs): round_trip_s, a whole push through Ray to a server
    actor on this machine as the worker waits for it (both sides' serialisation and the
    scheduling included), and server_push_s, the server's share of it: the actor process's own
    CPU time per push (taking the call, deserialising the gradient, applying it, copying and
    serialising the answer), the time a server with a core of its own would be busy."""
    from a3c_course.training.backend import build_shared_model

    model = build_shared_model(config)
    weights = [p.detach().clone() for p in model.parameters()]
    grads = [torch.randn_like(p) for p in model.parameters()]
    server = ParameterServer(config, model.architecture, weights, None, 0)
    costs = {
        "model_bytes": sum(p.numel() * p.element_size() for p in model.parameters()),
        "apply_s": seconds_each(
            lambda: apply_gradient(server.model, server.optimizer, grads, config.lr), updates
        ),
        "reply_s": seconds_each(server.pull, updates),
    }
    if ray_round_trip:
        costs.update(ray_push_costs(config, model.architecture, weights, grads, updates))
    return costs


def ray_push_costs(config: TrainConfig, architecture, weights, grads, updates: int) -> dict:
    """A push through Ray to a server actor on this machine: round_trip_s as the worker waits for
    it, and server_push_s, the actor process's own CPU time per push (all its threads, less what
    they spend idle over as long a stretch). Uses the Ray already running, else starts one."""
    import ray

    from a3c_course.training.ray_backend import ServerActor, start_ray, to_wire  # Ray: optional

    class ClockedServer(ServerActor):
        def cpu_seconds(self) -> float:
            return time.process_time()

    started = not ray.is_initialized()  # a notebook's Ray may be running: use it, leave it up
    if started:
        start_ray()
    actor = ray.remote(ClockedServer).remote(config, architecture, weights, None, 0)
    try:
        ray.get(actor.pull.remote())  # the actor is up
        cpu_before = ray.get(actor.cpu_seconds.remote())
        grad = to_wire(grads)  # as a worker sends it
        round_trip_s = seconds_each(lambda: ray.get(actor.push.remote(grad, 0, 0)), updates)
        cpu_pushing = ray.get(actor.cpu_seconds.remote()) - cpu_before
        cpu_before = ray.get(actor.cpu_seconds.remote())
        time.sleep(round_trip_s * updates)
        cpu_idle = ray.get(actor.cpu_seconds.remote()) - cpu_before
    finally:
        ray.kill(actor)
        if started:
            ray.shutdown()
    return {
        "round_trip_s": round_trip_s,
        "server_push_s": max(0.0, cpu_pushing - cpu_idle) / updates,
    }
