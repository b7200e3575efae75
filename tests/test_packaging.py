"""The two ways to install the course agree: environment.yml covers every pyproject dependency."""

import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
# conda-forge names for PyPI packages whose names differ.
CONDA_NAMES = {"torch": "pytorch-cpu", "opencv-python-headless": "py-opencv"}
MUST_COME_FROM_PIP = {"ale-py", "gymnasium"}  # conda-forge's ale-py has no ROMs
# Extras that are not the course: "bench" (stable-baselines3) serves one benchmark only.
NOT_IN_THE_COURSE_ENV = {"bench"}


def requirement_name(spec: str) -> str:
    return re.split(r"[<>=!~;\[ ]", spec, maxsplit=1)[0].strip().lower()


def pyproject_requirements() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    assert NOT_IN_THE_COURSE_ENV <= set(extras)  # a renamed extra must not slip into the check
    course_extras = [group for name, group in extras.items() if name not in NOT_IN_THE_COURSE_ENV]
    specs = project["dependencies"] + [spec for group in course_extras for spec in group]
    return {requirement_name(spec) for spec in specs}


def environment_yml() -> tuple[set[str], set[str]]:
    deps = yaml.safe_load((ROOT / "environment.yml").read_text())["dependencies"]
    conda = {requirement_name(d) for d in deps if isinstance(d, str)}
    pip = {requirement_name(d) for group in deps if isinstance(group, dict) for d in group["pip"]}
    return conda, pip


def test_environment_yml_covers_every_pyproject_dependency():
    conda, pip = environment_yml()
    missing = {
        name
        for name in pyproject_requirements()
        if CONDA_NAMES.get(name, name) not in conda | pip and name not in pip
    }
    assert not missing, f"environment.yml lacks: {sorted(missing)}"
    assert "stable-baselines3" not in conda | pip  # the benchmark's extra stays out of the course


def test_ale_and_gymnasium_come_from_pip_and_the_course_is_installed():
    conda, pip = environment_yml()
    assert MUST_COME_FROM_PIP <= pip and not MUST_COME_FROM_PIP & conda
    assert (
        "-e ." in yaml.safe_load((ROOT / "environment.yml").read_text())["dependencies"][-1]["pip"]
    )


def test_the_package_accepts_the_versions_colab_ships():
    """Colab's preinstalled ipywidgets, numpy and matplotlib satisfy the package's own ranges, so its
    setup cell upgrades none of them (`make colab-check` installs it that way and checks)."""
    import sys

    from packaging.requirements import Requirement

    sys.path.insert(0, str(ROOT / "tools"))
    from colab_stack import COLAB_STACK

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    ranges = {Requirement(spec).name: Requirement(spec).specifier for spec in project["dependencies"]}
    shipped = {name: COLAB_STACK[name] for name in ("ipywidgets", "numpy", "matplotlib")}
    for name, version in shipped.items():
        assert ranges[name].contains(version), f"{name} {version} (Colab's) is outside {ranges[name]}"
