"""`a3c-course doctor` (is this machine ready for the course?) and `a3c-course exercises` (the
instructor edition, and a report on a learner's notebook)."""

from __future__ import annotations

import argparse

from a3c_course.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    Parser,
    UsageError,
    add_command,
    positive_int,
)

# -- doctor --------------------------------------------------------------------------------------


def add_doctor(subparsers) -> None:
    add_command(
        subparsers,
        "doctor",
        run_doctor,
        "check this machine for the course: versions, ROMs, CPUs, video, widgets",
    )


def run_doctor(args: argparse.Namespace) -> int:
    """Print what a bug report needs (Python, torch, gymnasium, ale-py and numpy versions; whether
    the Breakout and Pong ROMs load; CPUs and start method; GPU; video writing; widgets) with a
    fix for each problem. Exit status 0 when all is well, 1 otherwise."""
    from a3c_course.lessons.doctor import run_doctor as diagnose

    return EXIT_OK if diagnose() else EXIT_FAILED


# -- exercises -----------------------------------------------------------------------------------


def add_exercises(subparsers) -> None:
    parser = add_command(
        subparsers,
        "exercises",
        None,
        help="the instructor edition of the notebooks, and a per-exercise report on a notebook",
        description="`instructor` writes the notebooks with every exercise's solution in place "
        "of its stub and outputs cleared; `check` runs a learner's notebook headless and reports "
        "each exercise (exit status 0 only when all passed).",
    )
    actions = parser.add_subparsers(
        dest="action", metavar="ACTION", required=True, parser_class=Parser
    )
    instructor = actions.add_parser(
        "instructor", help="write the instructor edition (the solutions filled in)"
    )
    instructor.add_argument(
        "--notebooks", default="notebooks", metavar="DIR", help="the learners' notebooks"
    )
    instructor.add_argument(
        "--out", default="instructor", metavar="DIR", help="where to write the edition"
    )
    instructor.set_defaults(run=run_exercises_instructor)
    check = actions.add_parser("check", help="run a notebook headless and report each exercise")
    check.add_argument("notebook", metavar="NOTEBOOK", help="the learner's .ipynb file")
    check.add_argument(
        "--timeout", type=positive_int, default=1200, help="seconds allowed per cell"
    )
    check.set_defaults(run=run_exercises_check)


def run_exercises_instructor(args: argparse.Namespace) -> int:
    from a3c_course.lessons.exercises.editions import write_instructor_edition

    try:
        written = write_instructor_edition(args.notebooks, args.out)
    except (FileNotFoundError, ValueError) as error:
        raise UsageError(str(error)) from None
    for path in written:
        print(f"wrote {path}")
    return EXIT_OK


def run_exercises_check(args: argparse.Namespace) -> int:
    from a3c_course.lessons.exercises.core import PASSED
    from a3c_course.lessons.exercises.grading import format_report, grade

    try:
        results = grade(args.notebook, timeout=args.timeout)
    except FileNotFoundError as error:
        raise UsageError(str(error)) from None
    print(format_report(args.notebook, results))
    return (
        EXIT_OK if results and all(result.status == PASSED for result in results) else EXIT_FAILED
    )
