"""What every subcommand shares: exit statuses, the one-line usage error, argument checks."""

from __future__ import annotations

import argparse
import inspect
import os
from collections.abc import Callable

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


class UsageError(Exception):
    """Bad input from the user: printed as one line, exit status 2."""


class Parser(argparse.ArgumentParser):
    """argparse, with its errors as one line and a pointer to --help instead of the full usage."""

    def error(self, message: str):
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {value:g}")
    return value


def check_writable(folder: str) -> None:
    """UsageError unless folder exists or can be made, and a file can be written in it."""
    import tempfile

    try:
        os.makedirs(folder, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as error:
        raise UsageError(
            f"cannot write to the output folder {folder}: {error.strerror or error}"
        ) from None


def add_command(
    subparsers, name: str, run: Callable[[argparse.Namespace], int] | None, help: str, **options
) -> argparse.ArgumentParser:
    """The parser of `a3c-course NAME`: its one-line help, and as its --help description run's
    docstring (unless options give one); parsing it sets args.run = run."""
    if run is not None:
        options.setdefault("description", inspect.cleandoc(run.__doc__ or ""))
    parser = subparsers.add_parser(name, help=help, **options)
    if run is not None:
        parser.set_defaults(run=run)
    return parser
