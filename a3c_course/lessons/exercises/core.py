"""What every exercise check shares: run a learner's function on cases, print a verdict that says
what is wrong (which input, expected versus got), and reveal hints one at a time.

A verdict line starts with one of the markers below and the exercise's id, e.g.
"PASSED [1.2] grey_and_resize: all 4 cases agree". `a3c-course exercises check` reads these lines.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

PASSED, FAILED, NOT_ATTEMPTED = "PASSED", "FAILED", "NOT ATTEMPTED"


@dataclass
class Case:
    """One input for a learner's function and the answer it should give."""

    description: str
    args: tuple
    expected: Any
    kwargs: dict = field(default_factory=dict)


def _as_array(x: Any) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def close(got: Any, expected: Any, atol: float = 1e-5, rtol: float = 1e-4) -> str | None:
    """None when got matches expected (shape and values), otherwise what differs, in words."""
    got_a, exp_a = _as_array(got), _as_array(expected)
    if got_a.shape != exp_a.shape:
        return f"shape {got_a.shape}, expected shape {exp_a.shape}"
    if not np.allclose(got_a.astype(float), exp_a.astype(float), atol=atol, rtol=rtol):
        if not exp_a.ndim:  # one number: no index to name
            return f"got {float(got_a):.6g}, expected {float(exp_a):.6g}"
        worst = np.unravel_index(np.argmax(np.abs(got_a - exp_a)), exp_a.shape)
        return (
            f"values differ; largest gap at index {tuple(int(i) for i in worst)}: "
            f"got {float(got_a[worst]):.6g}, expected {float(exp_a[worst]):.6g}"
        )
    return None


def _short(x: Any, prefix: str = "") -> str:
    """x printed briefly, its later lines aligned under prefix's end; cut at a line's end when long."""
    text = np.array2string(_as_array(x), precision=4, threshold=12, edgeitems=3, prefix=prefix)
    if len(text) < 200:
        return text
    cut = text.rfind("\n", 0, 200)
    return (text[:cut] if cut > 0 else text[:200]) + " ..."


def labelled(label: str, x: Any, indent: str = "  ") -> str:
    """One value, labelled: e.g. "  expected: [0.5 1. ]", later lines aligned under the first's."""
    prefix = f"{indent}{label} "
    return prefix + _short(x, prefix)


def expected_and_got(expected: Any, got: Any) -> list[str]:
    """The lines a failed case prints after its cause, by default: both values, labelled."""
    return [labelled("expected:", expected), labelled("got:     ", got)]


def show_pair(names: tuple[str, str]) -> Callable[[Any, Any], list[str]]:
    """For a function that returns a pair: each half labelled with its name, expected above got
    (rather than both halves stacked into one unlabelled array)."""

    def show(expected: Any, got: Any) -> list[str]:
        pair = isinstance(got, (tuple, list)) and len(got) == 2
        lines = []
        for k, name in enumerate(names):
            label = f"{name} expected:"
            lines.append(labelled(label, expected[k]))
            lines += [labelled(f"{name} got:".ljust(len(label)), got[k])] if pair else []
        return lines if pair else [*lines, f"  got: a {type(got).__name__}, not a pair"]

    return show


class NamedMistake(Exception):
    """Raised by a check's wrapper around the learner's code when it recognises why that code
    raised: the verdict then prints this message alone, in place of the input and the error."""


def report(exercise_id: str, name: str, problem: str | None, n_cases: int = 0) -> bool:
    """Print the verdict line (and the problem) and return whether the exercise passed."""
    if problem is None:
        print(f"{PASSED} [{exercise_id}] {name}: all {n_cases} cases agree. Well done!")
        return True
    marker = NOT_ATTEMPTED if problem == NOT_ATTEMPTED else FAILED
    detail = (
        "replace `raise NotImplementedError` with your code."
        if marker == NOT_ATTEMPTED
        else problem
    )
    print(f"{marker} [{exercise_id}] {name}: {detail}")
    return False


def call_learner(call: Callable[[], Any], description: str) -> tuple[Any, str | None]:
    """Run the learner's code: (its result, None), or (None, NOT_ATTEMPTED) for a stub, or
    (None, what it raised and on which input) for a bug, or (None, the message alone) for a
    NamedMistake."""
    try:
        return call(), None
    except NotImplementedError:
        return None, NOT_ATTEMPTED
    except NamedMistake as mistake:  # the check knows this error: its message says why
        return None, str(mistake)
    except Exception as error:  # the learner's bug: say where it happened
        return None, f"on {description} it raised {type(error).__name__}: {error}"


def naming_error(func: Callable, words: Sequence[str], message: str) -> Callable:
    """func, with an error whose text has all of words (a known slip's, e.g. PyTorch's on
    `1 - flag` for a bool tensor) raised as NamedMistake(message), which says what to do instead.
    Other errors, a stub's NotImplementedError among them, go on as they are."""

    def run(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except Exception as error:
            if not isinstance(error, NotImplementedError) and all(w in str(error) for w in words):
                raise NamedMistake(message) from error
            raise

    run.__name__ = getattr(func, "__name__", "your function")
    return run


def check_cases(
    exercise_id: str,
    func: Callable,
    cases: Sequence[Case],
    compare: Callable[[Any, Any], str | None] = close,
    diagnose: Callable[[Case, Any], str | None] | None = None,
    show: Callable[[Any, Any], list[str]] = expected_and_got,
) -> bool:
    """Run func on every case; report the first that disagrees, with its input, the likely cause
    when diagnose(case, got) recognises a known mistake in what it got, and the lines
    show(expected, got) makes (by default both values; a summary where they are large)."""
    name = getattr(func, "__name__", "your function")
    for case in cases:
        got, problem = call_learner(
            lambda case=case: func(*case.args, **case.kwargs), case.description
        )
        if problem is not None:
            return report(exercise_id, name, problem)
        problem = compare(got, case.expected)
        if problem is not None:
            cause = diagnose(case, got) if diagnose is not None else None
            lines = [f"on {case.description}: {problem}."]
            lines += [f"  likely cause: {cause}."] if cause else []
            lines += show(case.expected, got)
            return report(exercise_id, name, "\n".join(lines))
    return report(exercise_id, name, None, len(cases))


def show_hints(hints: Sequence[str]) -> None:
    """A button that reveals the hints one at a time (plain text where widgets cannot render)."""
    import ipywidgets as widgets
    from IPython.display import display

    shown = widgets.VBox([])
    button = widgets.Button(description=f"Show hint 1 of {len(hints)}", icon="lightbulb-o")

    def reveal(_=None):
        n = len(shown.children)
        shown.children = (*shown.children, widgets.HTML(f"<b>Hint {n + 1}.</b> {hints[n]}"))
        if n + 1 == len(hints):
            button.disabled, button.description = True, "No more hints"
        else:
            button.description = f"Show hint {n + 2} of {len(hints)}"

    button.on_click(reveal)
    display(widgets.VBox([button, shown]))
