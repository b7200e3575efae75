"""Every module of the package imports on its own, and the layers keep their import contracts.

A module that imports only because another one was imported before it (an import cycle, a name
taken from a half-initialised module) breaks the first notebook or command that imports it first.
So each module is imported first, in a process where no other module of the package is loaded.

One interpreter per module costs about 1.5 s, almost all of it torch, matplotlib, ipywidgets and
Jupyter's libraries: some 70 modules would take over a minute on two cores. So one fresh
interpreter imports those third-party libraries (PRELOAD; never a module of the package), then
forks a child per module; each child imports its module first and exits (about 6 s in all, not
60). Where there is no fork (Windows), each module gets its own interpreter instead.

The contracts (layers, no cycle inside a layer, no plotting or widget library under the algorithm
and the machinery) are [tool.importlinter] in pyproject.toml, checked by `lint-imports`.
"""

from __future__ import annotations

import importlib.util
import json
import os
import pkgutil
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "a3c_course"
JOBS = 2  # children importing at once (the course's machines have two cores)
# Modules of an optional extra, allowed to fail for lack of it: the Ray backend needs `[cluster]`.
OPTIONAL = {"ray": "a3c_course[cluster]"}
# The slow third-party imports the children share (each is loaded as the package's own `import`
# statements load it; one that is not installed is skipped). Not Ray: it must not be forked.
PRELOAD = [
    "torch", "numpy", "gymnasium", "ale_py", "cv2", "imageio", "matplotlib.pyplot",
    "ipywidgets", "IPython", "nbformat", "nbclient",
]  # fmt: skip

# Run in a fresh interpreter: import PRELOAD (the slow, shared part), then fork one child per
# module, JOBS at a time. Prints {module: [exit status, stdout and stderr]} as JSON.
FORK_SERVER = r"""
import json, os, sys, tempfile, traceback, importlib

jobs, preload, names = json.loads(sys.argv[1])
for module in preload:
    try:
        importlib.import_module(module)
    except ImportError:
        pass
assert not [m for m in sys.modules if m.split(".")[0] == "a3c_course"], "preloaded the package"
results, running = {}, {}

def reap():
    pid, status = os.wait()
    name, log = running.pop(pid)
    log.seek(0)
    results[name] = [os.waitstatus_to_exitcode(status), log.read().decode(errors="replace")]
    log.close()

for name in names:
    while len(running) >= jobs:
        reap()
    log = tempfile.TemporaryFile()
    sys.stdout.flush(); sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        os.dup2(log.fileno(), 1); os.dup2(log.fileno(), 2)
        try:
            importlib.import_module(name)
        except BaseException:
            traceback.print_exc()
            sys.stderr.flush()
            os._exit(1)
        sys.stdout.flush(); sys.stderr.flush()
        os._exit(0)
    running[pid] = (name, log)
while running:
    reap()
print(json.dumps(results))
"""


def package_modules() -> list[str]:
    """Every module and subpackage of the package, found on disk (nothing is imported to list them:
    pkgutil.walk_packages would import each subpackage here, in the test's own process)."""

    def walk(path: Path, prefix: str):
        for module in pkgutil.iter_modules([str(path)], prefix):
            yield module.name
            if module.ispkg:
                yield from walk(path / module.name.rpartition(".")[2], module.name + ".")

    return [PACKAGE, *walk(ROOT / PACKAGE, PACKAGE + ".")]


def import_each_first(names: list[str]) -> dict[str, tuple[int, str]]:
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path}  # the checkout's package, installed or not
    if hasattr(os, "fork"):
        done = subprocess.run(
            [sys.executable, "-c", FORK_SERVER, json.dumps([JOBS, PRELOAD, names])],
            capture_output=True, text=True, cwd=ROOT, env=env, timeout=600,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return {name: (status, err) for name, (status, err) in json.loads(done.stdout).items()}

    def one(name: str) -> tuple[int, str]:
        run = subprocess.run(
            [sys.executable, "-c", f"import {name}"],
            capture_output=True, text=True, cwd=ROOT, env=env, timeout=300,
        )  # fmt: skip
        return run.returncode, run.stdout + run.stderr

    with ThreadPoolExecutor(JOBS) as pool:
        return dict(zip(names, pool.map(one, names), strict=True))


def missing_extra(stderr: str) -> str | None:
    """The extra a failed import lacks, if that is why it failed and the extra is not installed."""
    for module, extra in OPTIONAL.items():
        if f"No module named '{module}'" in stderr and importlib.util.find_spec(module) is None:
            return extra
    return None


def test_the_walk_finds_every_layer():
    names = package_modules()
    assert len(names) == len(set(names))
    for layer in ("a3c", "training", "measure", "lessons", "cli"):
        assert f"{PACKAGE}.{layer}" in names
    assert f"{PACKAGE}.a3c.model" in names and f"{PACKAGE}.lessons.panels.gameplay" in names


@pytest.mark.timeout(600)
def test_every_module_imports_first_in_a_fresh_interpreter():
    names = package_modules()
    results = import_each_first(names)
    assert set(results) == set(names)
    failed = {
        name: err
        for name, (status, err) in results.items()
        if status != 0 and missing_extra(err) is None
    }
    report = "\n\n".join(
        f"--- import {name} (first, in a fresh interpreter) failed:\n{err.strip()}"
        for name, err in sorted(failed.items())
    )
    assert not failed, (
        f"{len(failed)} of {len(names)} modules do not import on their own:\n\n{report}"
    )


def lint_imports_command() -> str | None:
    beside_python = Path(sys.executable).with_name("lint-imports")
    return str(beside_python) if beside_python.exists() else shutil.which("lint-imports")


@pytest.mark.timeout(300)
def test_the_import_contracts_hold():
    command = lint_imports_command()
    if command is None:
        pytest.skip("lint-imports is not installed (pip install import-linter, or the [dev] extra)")
    run = subprocess.run(
        [command, "--no-cache"], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    assert run.returncode == 0, f"lint-imports: a contract is broken\n{run.stdout}{run.stderr}"
