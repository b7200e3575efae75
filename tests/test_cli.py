"""The command line: train and evaluate end to end, one-line errors for bad input, and Ctrl-C."""

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from a3c_course.a3c.model import ActorCritic
from a3c_course.cli.main import main
from a3c_course.training.checkpoint import load_checkpoint, save_checkpoint
from a3c_course.training.config import TrainConfig

COMMAND = str(Path(sys.executable).parent / "a3c-course")
SMALL_RUN = [
    "--game", "CartPole-v1", "--workers", "2", "--envs-per-worker", "2", "--hidden-size", "16",
    "--eval-episodes", "1", "--eval-interval-s", "0.2", "--lr", "1e-3",
]  # fmt: skip


@pytest.mark.timeout(120)
def test_train_then_evaluate(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["train", *SMALL_RUN, "--steps", "2000", "--out", str(out), "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert (
        "Training on CartPole-v1: 2 workers x 2 environments, until 2,000 steps, 30 minutes"
        in printed
    )
    assert "Stopped (max_steps) after" in printed and f"Checkpoint: {out}/checkpoint.pt" in printed
    assert (out / "metrics.jsonl").read_text() and (out / "config.json").exists()
    assert load_checkpoint(out / "checkpoint.pt").config.lr == 1e-3

    assert main(["evaluate", "--checkpoint", str(out / "checkpoint.pt"), "--episodes", "3"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("Evaluating") and "3 episodes, greedy policy" in printed[0]
    assert [line.split(":")[0] for line in printed[1:4]] == [
        "episode   1",
        "episode   2",
        "episode   3",
    ]
    assert printed[4].startswith("score: mean ") and printed[4].endswith("over 3 episodes")


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["train", "--lr", "-1"], "lr must be a positive number, e.g. 1e-4, got -1.0"),
        (["train", "--workers", "0"], "workers must be an integer >= 1, got 0"),
        (["train", "--gamma", "1.5"], r"gamma must be in \(0, 1\], got 1.5"),
        (["train", "--game", "tetris"], "game: Unknown game 'tetris'"),
        (["train", "--address", "auto"], "ray_address must be None with backend 'hogwild'"),
        (["evaluate", "--checkpoint", "missing.pt"], "no checkpoint at missing.pt"),
    ],
)
def test_invalid_values_give_one_line_and_status_2(arguments, message, capsys):
    assert main(arguments) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"a3c-course {arguments[0]}: error: ")
    assert re.search(message, err)


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["train", "--lr", "fast"], "argument --lr: invalid float value: 'fast'"),
        (["train", "--optimizer", "sgd"], "argument --optimizer: invalid choice: 'sgd'"),
        (["train", "--backend", "mpi"], "argument --backend: invalid choice: 'mpi'"),
        (["evaluate"], "one of the arguments --checkpoint --pretrained is required"),
        (["evaluate", "--checkpoint", "x.pt", "--episodes", "0"], "must be at least 1, got 0"),
        ([], "the following arguments are required: COMMAND"),
    ],
)
def test_malformed_arguments_give_one_line_and_status_2(arguments, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(arguments)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "--help" in err


def test_a_checkpoint_for_another_game_or_a_corrupt_one(tmp_path, capsys):
    path = save_checkpoint(
        tmp_path / "cp.pt", ActorCritic((4,), 2, 16), TrainConfig(game="CartPole-v1")
    )
    assert main(["evaluate", "--checkpoint", str(path), "--game", "pong"]) == 2
    assert "was trained on CartPole-v1, not on ALE/Pong-v5" in capsys.readouterr().err
    path.write_bytes(b"not a checkpoint")
    assert main(["evaluate", "--checkpoint", str(path)]) == 2
    assert "is not a readable checkpoint" in capsys.readouterr().err


def test_help_describes_every_training_option_with_its_default(capsys):
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for flag in ["--game GAME", "--workers N", "--minutes X", "--steps N", "--target-score X",
                 "--out DIR", "--lr X", "--envs-per-worker N", "--optimizer {adam,rmsprop}"]:  # fmt: skip
        assert flag in text
    assert "learning rate of the shared optimizer (the original's: 1e-4) (default: 0.0007)" in text
    assert "(default: 30.0); 'none' for no limit" in text


def test_the_installed_command_reports_user_errors_without_a_traceback():
    done = subprocess.run([COMMAND, "train", "--workers", "0"], capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr == "a3c-course train: error: workers must be an integer >= 1, got 0\n"


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_ctrl_c_stops_training_leaves_no_process_and_saves(tmp_path):
    """Ctrl-C in a terminal sends SIGINT to every process of the group: the children ignore it,
    the parent stops them, saves the checkpoint and exits with status 130."""
    out = tmp_path / "run"
    # Run the console script's main() with Ctrl-C's default handler: a shell that starts the tests in
    # the background (`make test &`, nohup) makes them ignore SIGINT, and children inherit that.
    interruptible = (
        "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
        "from a3c_course.cli.main import main; sys.exit(main())"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", interruptible, "train", *SMALL_RUN, "--minutes", "5", "--out",
         str(out), "--quiet"],  # fmt: skip
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    metrics = out / "metrics.jsonl"
    deadline = time.monotonic() + 120
    while not (metrics.exists() and metrics.read_text().count("\n") >= 3):
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.2)
    children = psutil.Process(process.pid).children(recursive=True)
    assert len(children) == 3  # two workers and the evaluator
    os.killpg(process.pid, signal.SIGINT)
    try:  # stopping includes writing the report (a learning curve and a gameplay video)
        stdout, stderr = process.communicate(timeout=150)
    except subprocess.TimeoutExpired:
        states = {p.pid: (p.name(), p.status()) for p in children if p.is_running()}
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        pytest.fail(f"no exit 150 s after Ctrl-C; children {states}\n{stdout}\n{stderr}")
    assert process.returncode == 130, stderr
    assert "Stopped (interrupted)" in stdout and "Traceback" not in stderr
    gone, alive = psutil.wait_procs(children, timeout=5)
    assert alive == []
    assert load_checkpoint(out / "checkpoint.pt").metadata["stop_reason"] == "interrupted"


def test_the_breakout_preset_and_boolean_flags():
    from a3c_course.cli.main import build_parser
    from a3c_course.cli.train import config_from_args
    from a3c_course.training.config import BREAKOUT

    config = config_from_args(build_parser().parse_args(["train", "--preset", "breakout"]))
    assert config == TrainConfig(**BREAKOUT) and config.game == "breakout"
    assert config.life_loss_terminal and config.out_dir == "runs/breakout"
    args = ["train", "--preset", "breakout", "--life-loss-terminal", "no"]
    assert not config_from_args(build_parser().parse_args(args)).life_loss_terminal
    with pytest.raises(SystemExit):
        build_parser().parse_args(["train", "--life-loss-terminal", "maybe"])
    with pytest.raises(ValueError, match="life_loss_terminal must be True or False, got 1"):
        TrainConfig(life_loss_terminal=1)


def test_a_preset_sets_its_settings_and_a_flag_beside_it_wins():
    from a3c_course.cli.main import build_parser
    from a3c_course.cli.train import config_from_args
    from a3c_course.training.config import ORIGINAL_COURSE

    args = build_parser().parse_args(["train", "--preset", "original-course", "--lr", "2e-4"])
    config = config_from_args(args)
    assert config.replace(lr=ORIGINAL_COURSE["lr"]) == TrainConfig(**ORIGINAL_COURSE)
    assert config.lr == 2e-4 and config.conv_filters == 32 and config.envs_per_worker == 1
    with pytest.raises(SystemExit):
        build_parser().parse_args(["train", "--preset", "fastest"])
    with pytest.raises(ValueError, match="preset: no preset 'fastest'; the presets are"):
        from a3c_course.training.config import preset

        preset("fastest")


def test_the_ray_backend_without_ray_installed_is_a_one_line_error(monkeypatch, capsys):
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "ray" else find_spec(name, *a)
    )
    assert main(["train", "--backend", "ray", "--game", "CartPole-v1", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install 'a3c-course[cluster]'" in err


def train_parser():
    import argparse

    from a3c_course.cli.main import build_parser

    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return commands.choices["train"]


def test_every_field_is_a_flag_with_its_aliases_help_and_choices(capsys):
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    squashed = "".join(capsys.readouterr().out.split())  # argparse wraps lines anywhere
    actions = {action.dest: action for action in train_parser()._actions}
    for name, setting in TrainConfig.settings().items():
        action = actions[name]
        assert action.option_strings == [*setting.aliases, "--" + name.replace("_", "-")]
        assert tuple(action.choices or ()) == setting.options(), name
        assert action.metavar == (None if setting.choices else setting.metavar), name
        for text in (*action.option_strings, setting.help, setting.none_means):
            assert "".join(text.split()) in squashed, (name, text)
        if setting.choices:
            assert "{" + ",".join(setting.options()) + "}" in squashed, name


@pytest.mark.parametrize("name", list(TrainConfig.settings()))
def test_each_flag_reads_its_field_values_as_the_config_takes_them(name, capsys):
    """The default, written out, reads back as itself and makes the same config; 'none' is None
    exactly where None is allowed; a choice field's flag refuses what is not a choice."""
    from a3c_course.cli.train import config_from_args

    setting = TrainConfig.settings()[name]
    flag = "--" + name.replace("_", "-")
    default = getattr(TrainConfig(), name)
    text = "none" if default is None else str(default)
    text = text.lower() if setting.kind is bool else text
    args = train_parser().parse_args([flag, text])
    assert getattr(args, name) == default and type(getattr(args, name)) is type(default)
    assert config_from_args(args) == TrainConfig(**{name: default})
    if setting.optional:
        assert getattr(train_parser().parse_args([flag, "none"]), name) is None
    elif setting.kind in (int, float, bool) or setting.choices:
        with pytest.raises(SystemExit):
            train_parser().parse_args([flag, "none"])
        assert flag in capsys.readouterr().err
