"""Google Colab's stack, as `make colab-check` rebuilds it, and the check that it stayed so.

    python tools/colab_stack.py pins     # the pins, one per line (for pip install -r / -c)
    python tools/colab_stack.py verify   # exit 1 unless the installed versions are Colab's

The versions are those a Colab session ships with (2025-2026 runtime): ipywidgets 7.7.1, IPython 7.34,
ipykernel 6.17, the classic notebook 6.5 and no JupyterLab; numpy 2.0.2, matplotlib 3.10.0. Colab runs
Python 3.12 with its own torch; here the check runs on Python 3.11 with the CPU torch 2.13.0, because
PyPI has no CPU wheel of torch for 3.12 (only the CUDA build, several GB with its nvidia libraries).

`verify` after installing the course the way the notebooks' setup cell does (pip, keeping what is
there) shows that the install upgraded nothing Colab had: no runtime restart needed.
"""

from __future__ import annotations

import sys
from importlib.metadata import PackageNotFoundError, version

COLAB_STACK = {
    "ipywidgets": "7.7.1",
    "ipython": "7.34.0",
    "ipykernel": "6.17.1",
    "notebook": "6.5.7",
    "numpy": "2.0.2",
    "matplotlib": "3.10.0",
}
ABSENT = ("jupyterlab",)  # Colab has its own front end


def installed(distribution: str) -> str | None:
    try:
        return version(distribution)
    except PackageNotFoundError:
        return None


def problems() -> list[str]:
    """What differs from Colab's stack in this environment."""
    found = [
        f"{name} is {installed(name)}, Colab has {wanted}"
        for name, wanted in COLAB_STACK.items()
        if installed(name) != wanted
    ]
    found += [f"{name} {installed(name)} is installed; Colab has none" for name in ABSENT if installed(name)]
    return found


def main(argv: list[str]) -> int:
    command = argv[1] if len(argv) > 1 else "verify"
    if command == "pins":
        print("\n".join(f"{name}=={wanted}" for name, wanted in COLAB_STACK.items()))
        return 0
    if command != "verify":
        print(f"usage: {argv[0]} pins|verify", file=sys.stderr)
        return 2
    found = problems()
    python = ".".join(map(str, sys.version_info[:3]))
    print(f"Python {python}, torch {installed('torch')}, a3c-course {installed('a3c-course')}")
    for line in found:
        print(f"NOT COLAB'S: {line}")
    if not found:
        stack = ", ".join(f"{name} {wanted}" for name, wanted in COLAB_STACK.items())
        print(f"Colab's stack kept: {stack}; no {', '.join(ABSENT)}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
