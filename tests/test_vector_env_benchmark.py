"""benchmarks/vector_env.py: ale-py's C++ vector environment gives the course's frames (the
deterministic game), and the script's measurement runs."""

import benchmark_scripts  # tests/ is on sys.path
import pytest


@pytest.fixture(scope="module")
def script():
    return benchmark_scripts.load("vector_env")


@pytest.mark.parametrize("game", ["pong", "breakout"])
def test_vector_env_gives_the_course_frames(script, game):
    equal, compared, outcomes = script.frames_agree(game, steps=300)
    assert compared > 100  # the frames of many steps, not just the first
    assert (equal, outcomes) == (compared, True)


def test_frames_without_max_pooling_are_found(script, monkeypatch):
    """Self-test: the comparison sees frames that differ (no max-pooling over the last two)."""
    import ale_py.vector_env

    class WithoutMaxPool(ale_py.vector_env.AtariVectorEnv):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **{**kwargs, "maxpool": False})

    monkeypatch.setattr(ale_py.vector_env, "AtariVectorEnv", WithoutMaxPool)
    equal, compared, _ = script.frames_agree("breakout", steps=100)
    assert equal < compared


@pytest.mark.slow
def test_vector_env_script_tiny_run(script, capsys):
    script.main(["--game", "breakout", "--envs", "2", "--seconds", "0.1", "--rounds", "1",
                 "--check-steps", "50"])  # fmt: skip
    out = capsys.readouterr().out
    assert "frames (deterministic game): " in out and "all equal" in out
    assert out.count("| ") >= 4 and "vector env alone" in out
