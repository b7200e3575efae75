"""The backends' contract: both implement backend.Backend, make_backend picks by config.backend,
and the parameter server's arithmetic (and the scaling model's in-process costs) need no Ray."""

import inspect
import subprocess
import sys
from typing import Protocol

import pytest

from a3c_course.training.backend import Backend, build_shared_model, make_backend
from a3c_course.training.config import TrainConfig
from a3c_course.training.hogwild import HogwildBackend

CARTPOLE = TrainConfig(game="CartPole-v1", workers=1, envs_per_worker=1)


def protocol_members(protocol: type) -> set[str]:
    """The names a class must have to implement a typing.Protocol (methods, properties, fields)."""
    names = set(getattr(protocol, "__annotations__", {}))
    for klass in protocol.__mro__:
        if klass in (Protocol, object) or not issubclass(klass, Protocol):
            continue
        names |= {name for name in vars(klass) if not name.startswith("_")}
    return names


def signature_names(function) -> list[str]:
    return list(inspect.signature(function).parameters)


@pytest.mark.parametrize("backend_name", ["hogwild", "ray"])
def test_each_backend_implements_the_protocol(backend_name):
    if backend_name == "ray":
        pytest.importorskip("ray")
        from a3c_course.training.ray_backend import RayBackend as backend_class
    else:
        backend_class = HogwildBackend
    members = protocol_members(Backend)
    assert {"config", "steps", "start", "receive", "dead_child", "stop", "latest_model"} <= members
    for name in members - {"config"}:  # config is set by __init__
        assert hasattr(backend_class, name), f"{backend_class.__name__} lacks {name}"
        wanted = getattr(Backend, name)
        if callable(wanted):
            assert signature_names(getattr(backend_class, name)) == signature_names(wanted), name


def test_make_backend_picks_the_configured_one():
    model = build_shared_model(CARTPOLE)
    from a3c_course.a3c.optim import SharedAdam

    backend = make_backend(CARTPOLE, model, SharedAdam(model.parameters(), lr=1e-3), steps=7)
    assert isinstance(backend, HogwildBackend) and backend.steps == 7
    assert backend.latest_model() is model


def test_the_parameter_server_and_its_costs_need_no_ray():
    """With `import ray` failing, the parameter server still applies a gradient and the scaling
    model still measures its in-process costs; only the Ray backend itself needs Ray."""
    code = """
import sys
sys.modules["ray"] = None  # any `import ray` now fails
import torch
from a3c_course.training.config import TrainConfig
from a3c_course.training.parameter_server import ParameterServer
from a3c_course.measure.scaling import measure_server_costs
config = TrainConfig(game="CartPole-v1", backend="ray")
costs = measure_server_costs(config, updates=3, ray_round_trip=False)
assert costs["apply_s"] > 0 and costs["model_bytes"] > 0 and "round_trip_s" not in costs
try:
    import a3c_course.training.ray_backend
except ImportError as error:
    assert "pip install 'a3c-course[cluster]'" in str(error), error
else:
    raise AssertionError("the Ray backend imported without Ray")
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
