"""The `a3c-course` command line.

    a3c-course train --game pong --workers 2 --minutes 30 --out runs/pong
    a3c-course evaluate --checkpoint runs/pong/checkpoint.pt --episodes 10
    a3c-course play --checkpoint runs/pong/checkpoint.pt --out pong.mp4

Each subcommand is two functions: `add_<name>(subparsers)` builds its parser and sets `run` to
`run_<name>(args) -> exit status`. To add one, write both and list `add_<name>` in `commands()`;
each lives in its own file: train.py, play.py (evaluate, play), course.py (doctor,
exercises).
A user's mistake (an invalid value, a missing or unsuitable checkpoint) raises UsageError: `main`
prints it as one line and exits with status 2, without a Python traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from a3c_course.cli.common import EXIT_INTERRUPTED, EXIT_USAGE, Parser, UsageError
from a3c_course.cli.course import add_doctor, add_exercises
from a3c_course.cli.play import add_evaluate, add_play
from a3c_course.cli.train import add_train


def commands() -> list[Callable]:
    """Every subcommand's add_<name>, in the order of the help."""
    return [add_train, add_evaluate, add_play, add_doctor, add_exercises]


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="a3c-course",
        description="Learn A3C by building it: train and evaluate agents on Atari games.",
    )
    subparsers = parser.add_subparsers(
        dest="command", metavar="COMMAND", required=True, parser_class=Parser
    )
    for add_command in commands():
        add_command(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return the exit status (0 ok, 1 failed, 2 bad input, 130 Ctrl-C)."""
    parser = build_parser()
    args = parser.parse_args(argv)  # usage errors exit here with status 2
    try:
        return args.run(args)
    except UsageError as error:
        print(f"a3c-course {args.command}: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"a3c-course {args.command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
