"""One solution to each exercise, kept as code that runs, and `solution("2.1")` to see it.

The notebooks a learner opens show each exercise as a stub: the solution's signature and docstring
with `raise NotImplementedError` where the answer goes. The stub is generated from the solution
here (`stub_source`), so the two cannot drift; the instructor edition puts the solution back
(`a3c-course exercises instructor`). A solution is one step away, never on the page: a learner
who is stuck calls `solution("2.1")` on purpose, after the hints.

Why not a collapsed cell in the notebook? Running the notebook top to bottom would run it too and
overwrite the learner's attempt, and a collapsed cell is one stray click from the answer.
"""

from __future__ import annotations

import importlib
import inspect
import re

# exercise id -> (module in this package, name of the function or class the learner writes)
EXERCISES: dict[str, tuple[str, str]] = {
    "1.1": ("unit1", "preprocess_frame"),
    "1.2": ("unit1", "skip_frames"),
    "1.3": ("unit1", "RunningNormalizer"),
    "2.1": ("unit2", "entropy_from_logits"),
    "2.2": ("unit2", "action_probabilities"),
    "2.3": ("unit2", "lstm_cell"),
    "3.1": ("unit3", "discounted_returns"),
    "3.2": ("unit3", "gae_one_env"),
    "3.3": ("unit3", "fixed_advantages_and_returns"),
    "4.1": ("unit4", "update"),
    "4.2": ("unit4", "fixed_update"),
    "4.3": ("unit4", "share_adam_state"),
    "5.1": ("unit5", "ParameterServer"),
    "5.2": ("unit5", "workers_one_server_feeds"),
}

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
SOLUTION_BLOCK = re.compile(
    rf"^(?P<indent>[ \t]*){re.escape(BEGIN)}[^\n]*\n.*?^[ \t]*{re.escape(END)}[^\n]*$",
    re.MULTILINE | re.DOTALL,
)
MARKER_LINE = re.compile(rf"^[ \t]*({re.escape(BEGIN)}|{re.escape(END)})[^\n]*\n", re.MULTILINE)
STUB = "{indent}# YOUR CODE HERE\n{indent}raise NotImplementedError"


def _known(exercise_id: str) -> tuple[str, str]:
    if exercise_id not in EXERCISES:
        raise ValueError(
            f"exercise_id: no exercise {exercise_id!r}; the course's exercises are "
            f"{', '.join(EXERCISES)}"
        )
    return EXERCISES[exercise_id]


def solution_object(exercise_id: str):
    """The solution itself (a function or class), e.g. to pass to the exercise's check."""
    module, name = _known(exercise_id)
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


def solution_source(exercise_id: str) -> str:
    """The solution's code as the instructor edition shows it (with nbgrader's markers)."""
    return inspect.getsource(solution_object(exercise_id)).rstrip() + "\n"


def strip_solutions(source: str) -> str:
    """Replace each solution block by a stub at the block's indentation."""
    if source.count(BEGIN) != source.count(END):
        raise ValueError(f"unbalanced solution markers in:\n{source}")
    return SOLUTION_BLOCK.sub(lambda match: STUB.format(indent=match["indent"]), source)


def stub_source(exercise_id: str) -> str:
    """What the learner's notebook shows: the signature and docstring, the body left to write."""
    return strip_solutions(solution_source(exercise_id))


def solution(exercise_id: str) -> None:
    """Show one solution to the exercise (try the hints first: yours may differ and still pass)."""
    code = MARKER_LINE.sub("", solution_source(exercise_id))
    print(f"One solution to exercise {exercise_id} (others pass the check too):\n")
    try:
        from IPython.display import Code, display

        display(Code(code, language="python"))
    except ImportError:  # plain Python, no IPython
        print(code)
