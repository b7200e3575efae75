"""Checkpoints: atomic writes, weights-only loading, and clear refusals."""

import os
import pickle
import traceback
import zipfile
from pathlib import Path

import pytest
import torch

from a3c_course.a3c.model import ActorCritic
from a3c_course.training.checkpoint import (
    CheckpointError,
    load_checkpoint,
    load_weights,
    model_from_checkpoint,
    save_checkpoint,
)
from a3c_course.training.config import TrainConfig


@pytest.fixture
def config():
    return TrainConfig(game="CartPole-v1", hidden_size=16)


@pytest.fixture
def model():
    torch.manual_seed(0)
    return ActorCritic((4,), 2, hidden_size=16)


def test_round_trip_gives_the_same_network_config_and_metadata(tmp_path, config, model):
    path = save_checkpoint(tmp_path / "run" / "model.pt", model, config, steps=1234, score=9.5)
    checkpoint = load_checkpoint(path)
    assert checkpoint.config == config
    assert checkpoint.metadata["steps"] == 1234 and checkpoint.metadata["score"] == 9.5
    assert checkpoint.network == {
        "obs_shape": (4,),
        "n_actions": 2,
        "hidden_size": 16,
        "activation": model.activation,
        "conv_filters": model.conv_filters,
    }
    restored = model_from_checkpoint(path, expect_game="CartPole-v1")
    assert not restored.training
    obs, state = torch.randn(3, 4), model.initial_state(3)
    torch.testing.assert_close(restored(obs, state).logits, model(obs, state).logits)
    # Nothing but the checkpoint is left in the folder (no temporary files).
    assert [p.name for p in path.parent.iterdir()] == ["model.pt"]


def test_an_interrupted_save_leaves_the_previous_checkpoint_intact(
    tmp_path, config, model, monkeypatch
):
    path = save_checkpoint(tmp_path / "model.pt", model, config, steps=1)

    def crash(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(KeyboardInterrupt):
        save_checkpoint(path, model, config, steps=2)
    assert load_checkpoint(path).metadata["steps"] == 1
    assert [p.name for p in tmp_path.iterdir()] == ["model.pt"]


def test_missing_file(tmp_path):
    with pytest.raises(
        CheckpointError, match="no checkpoint at .*nothing.pt: the file does not exist"
    ):
        load_checkpoint(tmp_path / "nothing.pt")


@pytest.mark.parametrize(
    "damage, reason",
    [
        ("truncate", "is not a readable checkpoint: it is not the zip archive that torch.save"),
        ("garbage", "is not a readable checkpoint: it is not the zip archive that torch.save"),
        ("empty", "is empty \\(0 bytes\\), not a checkpoint"),
    ],
)
def test_corrupt_file_is_refused(tmp_path, config, model, damage, reason):
    path = save_checkpoint(tmp_path / "model.pt", model, config)
    data = path.read_bytes()
    path.write_bytes(
        {"truncate": data[: len(data) // 2], "garbage": os.urandom(2000), "empty": b""}[damage]
    )
    with pytest.raises(CheckpointError, match=reason):
        load_checkpoint(path)


def test_a_zip_that_is_not_a_torch_file(tmp_path):
    path = tmp_path / "archive.pt"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("notes/readme.txt", "not a network")
    with pytest.raises(CheckpointError, match="is a zip archive but not a file written by torch"):
        load_checkpoint(path)


def test_weights_of_another_shape_are_named(tmp_path, config, model):
    path = tmp_path / "reshaped.pt"
    save_checkpoint(path, model, config)
    payload = torch.load(path, weights_only=True)
    payload["model_state"]["actor.weight"] = torch.zeros(7, 3)
    torch.save(payload, path)
    with pytest.raises(
        CheckpointError,
        match="incomplete or damaged: .*actor.weight has shape \\(7, 3\\), the network \\(2, 16\\)",
    ):
        model_from_checkpoint(path)


class RunsCode:
    """Unpickling this object would call Path.touch(marker): code chosen by the file's author."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (Path.touch, (Path(self.marker),))


def test_a_pickle_that_would_run_code_is_refused_and_does_not_run(tmp_path, config, model):
    marker = tmp_path / "code-ran"
    path = tmp_path / "evil.pt"
    save_checkpoint(path, model, config)
    payload = torch.load(path, weights_only=True)
    payload["metadata"]["surprise"] = RunsCode(marker)
    torch.save(payload, path)
    with pytest.raises(CheckpointError, match="refused to load .*could run code"):
        load_checkpoint(path)
    assert not marker.exists()
    # The reference: an unsafe load of the same file does run the code.
    torch.load(path, weights_only=False)
    assert marker.exists()


def test_a_torch_file_that_is_not_a_checkpoint(tmp_path):
    path = tmp_path / "weights.pt"
    torch.save({"some": torch.zeros(2)}, path)
    with pytest.raises(CheckpointError, match="not an a3c-course checkpoint"):
        load_checkpoint(path)


def test_a_checkpoint_for_another_game_is_refused(tmp_path, config, model):
    path = save_checkpoint(tmp_path / "model.pt", model, config)
    with pytest.raises(CheckpointError, match="was trained on CartPole-v1, not on ALE/Pong-v5"):
        load_checkpoint(path, expect_game="pong")
    with pytest.raises(CheckpointError, match="not on ALE/Breakout-v5"):
        model_from_checkpoint(load_checkpoint(path), expect_game="breakout")


def test_a_checkpoint_for_another_network_is_refused(tmp_path, config, model):
    checkpoint = load_checkpoint(save_checkpoint(tmp_path / "model.pt", model, config))
    other = ActorCritic((4,), 2, hidden_size=32)
    with pytest.raises(
        CheckpointError,
        match="LSTM size 16; this model has observations \\(4,\\), 2 actions, LSTM size 32",
    ):
        load_weights(other, checkpoint)


@pytest.mark.parametrize("activation, filters", [("relu", 8), ("elu", 16)])
def test_the_conv_body_is_rebuilt_as_it_was_saved(tmp_path, activation, filters):
    torch.manual_seed(0)
    model = ActorCritic((1, 42, 42), 6, 16, activation=activation, conv_filters=filters)
    path = save_checkpoint(tmp_path / "model.pt", model, TrainConfig(game="pong"))
    restored = model_from_checkpoint(path)
    assert (restored.activation, restored.conv_filters) == (activation, filters)
    frames = torch.randn(5, 1, 42, 42)
    torch.testing.assert_close(restored(frames).logits, model(frames).logits, rtol=0, atol=0)
    # The other activation fits the same weights but is another network: refused, not loaded.
    other = ActorCritic((1, 42, 42), 6, 16, activation={"relu": "elu", "elu": "relu"}[activation],
                        conv_filters=filters)  # fmt: skip
    with pytest.raises(CheckpointError, match=f"conv body of {filters} filters with {activation}"):
        load_weights(other, load_checkpoint(path))


def test_a_checkpoint_from_before_the_network_options_holds_the_original_body(tmp_path):
    """Checkpoints written before activation and conv_filters were recorded (the shipped Pong
    agent's among them) hold the original course's body: ELU and 32 filters."""
    torch.manual_seed(0)
    model = ActorCritic((1, 42, 42), 6, 16, activation="elu", conv_filters=32)
    path = save_checkpoint(tmp_path / "model.pt", model, TrainConfig(game="pong"))
    payload = torch.load(path, weights_only=True)
    del payload["network"]["activation"], payload["network"]["conv_filters"]
    torch.save(payload, path)
    restored = model_from_checkpoint(path)
    assert (restored.activation, restored.conv_filters) == ("elu", 32)
    frames = torch.randn(5, 1, 42, 42)
    torch.testing.assert_close(restored(frames).logits, model(frames).logits, rtol=0, atol=0)


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")
@pytest.mark.parametrize("protocol", [2, pickle.HIGHEST_PROTOCOL])
def test_a_plain_pickle_that_would_run_code_is_refused(tmp_path, protocol):
    marker = tmp_path / "code-ran"
    path = tmp_path / "evil.pt"
    path.write_bytes(pickle.dumps(RunsCode(marker), protocol=protocol))
    # Protocol 2 reaches the forbidden global and is refused as unsafe; newer protocols are
    # rejected even earlier, as unreadable. Either way nothing runs.
    with pytest.raises(CheckpointError, match="refused to load" if protocol == 2 else "evil.pt"):
        load_checkpoint(path)
    assert not marker.exists()


def _bad_files(folder, config, model):
    """One file for each way a checkpoint can be unusable (see read_torch_file)."""
    good = save_checkpoint(folder / "good.pt", model, config).read_bytes()
    files = {
        "random bytes": os.urandom(3000),
        "empty": b"",
        "cut short": good[: len(good) // 3],
        "bare pickle": pickle.dumps(RunsCode(folder / "ran"), protocol=2),
    }
    for name, data in files.items():
        (folder / f"{name}.pt").write_bytes(data)
    with zipfile.ZipFile(folder / "zip.pt", "w") as archive:
        archive.writestr("x/y.txt", "hello")
    payload = torch.load(folder / "good.pt", weights_only=True)
    payload["metadata"]["surprise"] = RunsCode(folder / "ran")
    torch.save(payload, folder / "code.pt")
    torch.save(model.state_dict(), folder / "state dict.pt")
    return sorted(p for p in folder.glob("*.pt") if p.name != "good.pt")


def test_no_refusal_advises_an_unsafe_load(tmp_path, config, model):
    """PyTorch's own messages for these files advise weights_only=False; ours never do, and name
    the file."""
    bad = _bad_files(tmp_path, config, model)
    assert len(bad) == 7
    for path in bad:
        with pytest.raises(CheckpointError) as caught:
            load_checkpoint(path)
        assert str(path) in str(caught.value)
        shown = "".join(traceback.format_exception(caught.value))  # as a notebook would show it
        assert "weights_only" not in shown and "trusted source" not in shown, shown
    assert not (tmp_path / "ran").exists()
