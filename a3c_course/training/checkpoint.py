"""Checkpoints: save a trained network with its config; load it back safely.

A checkpoint is one file written by `torch.save` holding only plain data and tensors:

    {"format": "a3c-course-checkpoint", "version": 1,
     "model_state": the network's state_dict,
     "network": {"obs_shape": [...], "n_actions": ..., "hidden_size": ...},
     "config": TrainConfig.to_dict(),
     "metadata": {"steps": ..., "elapsed_s": ..., ...}}

Saving is atomic: the file is written under a temporary name in the same folder, flushed to disk,
then renamed over the target (`os.replace`), so a crash or Ctrl-C mid-save never leaves a half-written
checkpoint where a good one was.

Loading uses `torch.load(..., weights_only=True)`. A plain `torch.load` unpickles arbitrary Python
objects, and unpickling can run any code the file's author chose; `weights_only=True` accepts only
tensors and plain containers, and refuses everything else. Every way a file can fail to load
(missing, empty, not a PyTorch file, damaged, holding code, not a course checkpoint, another game or
network) gets its own CheckpointError in plain words (read_torch_file); PyTorch's own advice to retry
with `weights_only=False` is never passed on.
"""

from __future__ import annotations

import os
import pickle
import re
import warnings
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from a3c_course.a3c.envs import resolve_env_id
from a3c_course.a3c.model import ORIGINAL_CONV_BODY, ActorCritic
from a3c_course.training.config import TrainConfig
from a3c_course.training.files import save_torch

FORMAT = "a3c-course-checkpoint"
VERSION = 1
CHECKPOINT_NAME = "checkpoint.pt"  # a training run's latest network
BEST_CHECKPOINT_NAME = "best.pt"  # the network that scored the best evaluation mean so far

__all__ = [
    "BEST_CHECKPOINT_NAME",
    "CHECKPOINT_NAME",
    "Checkpoint",
    "CheckpointError",
    "save_checkpoint",
    "load_checkpoint",
    "load_weights",
    "model_from_checkpoint",
    "read_torch_file",
]


class CheckpointError(ValueError):
    """A checkpoint that cannot be used: missing, corrupt, unsafe, or made for something else."""


@dataclass
class Checkpoint:
    """A loaded checkpoint: the network's weights and shape, the run's config, and metadata."""

    path: Path
    model_state: dict[str, torch.Tensor]
    network: dict[str, Any]  # ActorCritic.architecture (obs_shape a tuple)
    config: TrainConfig
    metadata: dict[str, Any] = field(default_factory=dict)

    def describe_network(self) -> str:
        return _describe(self.network)


def network_spec(model: ActorCritic) -> dict[str, Any]:
    """What it takes to rebuild the network (model.architecture), as plain data."""
    return dict(model.architecture, obs_shape=list(model.obs_shape))


# Checkpoints written before the network had options hold the original course's conv body.
LEGACY_NETWORK = ORIGINAL_CONV_BODY


def _describe(spec: dict[str, Any]) -> str:
    body = ""
    if len(spec["obs_shape"]) == 3:
        body = f"conv body of {spec['conv_filters']} filters with {spec['activation']}, "
    return (
        f"observations {tuple(spec['obs_shape'])}, {spec['n_actions']} actions, {body}"
        f"LSTM size {spec['hidden_size']}"
    )


def save_checkpoint(
    path: str | os.PathLike, model: ActorCritic, config: TrainConfig, **metadata: Any
) -> Path:
    """Write model and config to path atomically; return the path.

    metadata: plain values only (str, int, float, bool, None, and lists/dicts of them), e.g.
        steps=..., elapsed_s=..., eval_score=....
    """
    payload = {
        "format": FORMAT,
        "version": VERSION,
        "model_state": {name: t.detach().clone() for name, t in model.state_dict().items()},
        "network": network_spec(model),
        "config": config.to_dict(),
        "metadata": dict(metadata, torch_version=str(torch.__version__)),
    }
    return save_torch(payload, path)


def load_checkpoint(path: str | os.PathLike, expect_game: str | None = None) -> Checkpoint:
    """Read a checkpoint safely (weights only). Raise CheckpointError with the reason when the file
    is missing, corrupt, would run code, is not a course checkpoint, or (with expect_game) was made
    for another game.
    """
    path = Path(path)
    payload = read_torch_file(path, "checkpoint")
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise CheckpointError(
            f"{path} is a PyTorch file but not an a3c-course checkpoint (one is written by training "
            "or save_checkpoint; a bare state dict has no game, network or settings to go with it)"
        )
    if payload.get("version") != VERSION:
        raise CheckpointError(
            f"{path} has checkpoint format version {payload.get('version')!r}; "
            f"this course reads version {VERSION}"
        )
    try:
        config = TrainConfig.from_dict(payload["config"])
        network = {**LEGACY_NETWORK, **payload["network"]}
        network["obs_shape"] = tuple(network["obs_shape"])
        checkpoint = Checkpoint(
            path, payload["model_state"], network, config, dict(payload.get("metadata", {}))
        )
    except (KeyError, TypeError, ValueError) as error:
        raise CheckpointError(f"{path} is an incomplete or invalid checkpoint: {error}") from error
    if expect_game is not None:
        check_game(checkpoint, expect_game)
    return checkpoint


def read_torch_file(path: str | os.PathLike, what: str = "checkpoint") -> Any:
    """torch.load(path, weights_only=True), every failure a CheckpointError in the course's words.

    PyTorch's own messages for a damaged file advise loading it again with weights_only=False, which
    for a damaged or untrusted file is the one thing not to do; they are never passed on.
    """
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"no {what} at {path}: the file does not exist")
    if path.stat().st_size == 0:
        raise CheckpointError(
            f"{path} is empty (0 bytes), not a {what}: a save that never finished, or the wrong file"
        )
    try:
        with warnings.catch_warnings():  # torch's notes on odd pickles: our error says it all
            warnings.simplefilter("ignore")
            return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as error:
        unsafe = re.search(r"(?:GLOBAL|Unsupported class) ([\w.]+)", str(error))
        if unsafe:
            raise CheckpointError(
                f"refused to load {path}: besides tensors and plain data it holds a Python object "
                f"({unsafe.group(1)}), and building it could run code chosen by the file's author. "
                f"A {what} written by the course holds none: this file was made elsewhere, or "
                "tampered with; it is not loaded"
            ) from None
        raise CheckpointError(_unreadable(path, what)) from None
    except Exception:
        raise CheckpointError(_unreadable(path, what)) from None


def _unreadable(path: Path, what: str) -> str:
    """Why a file that torch.load refused is not a readable checkpoint, judged from its bytes."""
    if not zipfile.is_zipfile(path):
        return (
            f"{path} is not a readable {what}: it is not the zip archive that torch.save writes "
            "(damaged, cut short, or another kind of file)"
        )
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
    if not any(name.endswith("data.pkl") for name in names):
        return f"{path} is a zip archive but not a file written by torch.save: not a {what}"
    return f"{path} is a PyTorch file whose contents are damaged: not a readable {what}"


def check_game(checkpoint: Checkpoint, game: str) -> None:
    """Raise CheckpointError unless the checkpoint was trained on `game`."""
    wanted, trained = resolve_env_id(game), resolve_env_id(checkpoint.config.game)
    if wanted != trained:
        raise CheckpointError(
            f"checkpoint {checkpoint.path} was trained on {trained}, not on {wanted}: "
            f"pick a checkpoint made for {game!r}, or pass game={checkpoint.config.game!r}"
        )


def load_weights(model: ActorCritic, checkpoint: Checkpoint) -> ActorCritic:
    """Copy the checkpoint's weights into model; CheckpointError if the network shapes differ."""
    mine = network_spec(model)
    theirs = dict(checkpoint.network, obs_shape=list(checkpoint.network["obs_shape"]))
    if mine != theirs:
        raise CheckpointError(
            f"checkpoint {checkpoint.path} holds a network for {_describe(theirs)}; "
            f"this model has {_describe(mine)}"
        )
    misfits = _state_misfits(checkpoint.model_state, model.state_dict())
    if misfits:
        raise CheckpointError(
            f"checkpoint {checkpoint.path} is incomplete or damaged: its weights do not fit the "
            f"network it describes ({'; '.join(misfits[:3])}{'; ...' if len(misfits) > 3 else ''})"
        )
    model.load_state_dict(checkpoint.model_state)
    return model


def _state_misfits(saved: dict[str, Any], wanted: dict[str, torch.Tensor]) -> list[str]:
    """What keeps the saved weights from loading into a network with the wanted ones."""
    misfits = [f"{name} missing" for name in wanted if name not in saved]
    misfits += [f"{name} unexpected" for name in saved if name not in wanted]
    for name, tensor in saved.items():
        if name not in wanted:
            continue
        if not isinstance(tensor, torch.Tensor):
            misfits.append(f"{name} is not a tensor")
        elif tensor.shape != wanted[name].shape:
            misfits.append(
                f"{name} has shape {tuple(tensor.shape)}, the network {tuple(wanted[name].shape)}"
            )
    return misfits


def model_from_checkpoint(
    checkpoint: str | os.PathLike | Checkpoint, expect_game: str | None = None
) -> ActorCritic:
    """A ready ActorCritic with the checkpoint's weights, in eval mode."""
    if not isinstance(checkpoint, Checkpoint):
        checkpoint = load_checkpoint(checkpoint, expect_game)
    elif expect_game is not None:
        check_game(checkpoint, expect_game)
    model = ActorCritic(**checkpoint.network)
    return load_weights(model, checkpoint).eval()


def best_eval_mean(path: str | os.PathLike) -> float | None:
    """The evaluation mean recorded in a best.pt, or None when there is no such file."""
    try:
        metadata = load_checkpoint(path).metadata
    except CheckpointError:
        return None
    mean = metadata.get("eval_mean")
    return None if mean is None else float(mean)
