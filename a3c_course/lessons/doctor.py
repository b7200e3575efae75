"""`a3c-course doctor`: what a learner pastes into a bug report, and a fix for each problem found."""

from __future__ import annotations

import importlib.metadata
import multiprocessing as mp
import os
import platform
import re
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class Finding:
    name: str
    ok: bool
    detail: str
    fix: str = ""


def version_of(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def major_minor(version: str) -> tuple[int, int]:
    """(major, minor) of a version string such as "2.13.0+cpu" or "1.0rc1"."""
    numbers = [int(re.match(r"\d*", part).group() or 0) for part in version.split(".")[:2]]
    return tuple(numbers + [0] * (2 - len(numbers)))


def check_python() -> Finding:
    ok = sys.version_info >= (3, 10)
    return Finding(
        "python", ok, platform.python_version(), "" if ok else "Install Python 3.10 or newer."
    )


PACKAGES = {  # package: (minimum version, how to fix)
    "torch": ("2.1", 'pip install "torch>=2.1" (on a CPU-only machine: the CPU wheel)'),
    "gymnasium": ("1.0", 'pip install "gymnasium>=1.0"'),
    "ale-py": ("0.9", 'pip install "ale-py>=0.9" from PyPI (its wheel carries the Atari ROMs)'),
    "numpy": ("1.24", 'pip install "numpy>=1.24"'),
    "opencv-python-headless": ("4.8", 'pip install "opencv-python-headless>=4.8"'),
    "ipywidgets": ("8.0", 'pip install "ipywidgets>=8"'),
    "imageio-ffmpeg": ("0.4", 'pip install "imageio-ffmpeg>=0.4.9"'),
}


def check_package(package: str) -> Finding:
    minimum, fix = PACKAGES[package]
    found = version_of(package)
    if package == "opencv-python-headless" and found is None:  # any OpenCV wheel will do
        found = version_of("opencv-python") or version_of("opencv-contrib-python")
    if found is None:
        return Finding(package, False, "not installed", fix)
    ok = major_minor(found) >= major_minor(minimum)
    return Finding(package, ok, found, "" if ok else f"{found} is older than {minimum}: {fix}")


def check_rom(game: str) -> Finding:
    try:
        from a3c_course.a3c.envs import make_env

        env = make_env(game, seed=0)
        obs, _ = env.reset()
        env.close()
        return Finding(f"{game} ROM", True, f"loads, observation {tuple(obs.shape)}")
    except Exception as error:  # report any failure with its fix, never crash the doctor
        return Finding(
            f"{game} ROM",
            False,
            f"{type(error).__name__}: {error}",
            "pip install --force-reinstall ale-py from PyPI (conda-forge's ale-py has no ROMs)",
        )


def check_cpus() -> Finding:
    cpus = os.cpu_count() or 1
    methods = mp.get_all_start_methods()
    method = "fork" if "fork" in methods else "spawn"
    return Finding(
        "CPUs / start method",
        True,
        f"{cpus} CPUs; workers start with {method!r} (available: {methods})",
    )


def check_gpu() -> Finding:
    import torch

    detail = (
        torch.cuda.get_device_name(0)
        if torch.cuda.is_available()
        else "none (not needed: A3C runs on CPUs)"
    )
    return Finding("GPU", True, detail)


def check_video() -> Finding:
    try:
        import warnings

        import numpy as np

        from a3c_course.lessons.video import write_video

        with tempfile.TemporaryDirectory() as folder, warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the GIF fallback's warning: reported below instead
            frames = [np.full((210, 160, 3), i * 20, dtype=np.uint8) for i in range(8)]
            path = write_video(frames, os.path.join(folder, "check.mp4"))
            ok = path.suffix == ".mp4" and path.stat().st_size > 0
        detail = "MP4 writing works" if ok else "no ffmpeg: videos fall back to GIF"
        return Finding("video (ffmpeg)", ok, detail, 'pip install "imageio-ffmpeg>=0.4.9"')
    except Exception as error:
        return Finding(
            "video (ffmpeg)",
            False,
            f"{type(error).__name__}: {error}",
            'pip install "imageio-ffmpeg>=0.4.9"',
        )


def check_widgets() -> Finding:
    in_colab = "google.colab" in sys.modules
    if in_colab:
        return Finding("widgets", True, "Colab: the setup cell enables its custom widget manager")
    frontend = version_of("jupyterlab_widgets")
    if frontend is None:
        return Finding(
            "widgets",
            False,
            "no JupyterLab widget front end",
            'pip install "ipywidgets>=8" (it brings jupyterlab_widgets)',
        )
    return Finding("widgets", True, f"jupyterlab_widgets {frontend}")


def all_checks() -> list[Callable[[], Finding]]:
    return [
        check_python,
        *[lambda package=package: check_package(package) for package in PACKAGES],
        lambda: check_rom("breakout"),
        lambda: check_rom("pong"),
        check_cpus,
        check_gpu,
        check_video,
        check_widgets,
    ]


def run_doctor(print_fn: Callable[[str], None] = print) -> bool:
    """Print one line per check (and the fix for each problem); return True when all is well."""
    findings = [check() for check in all_checks()]
    width = max(len(finding.name) for finding in findings)
    for finding in findings:
        print_fn(f"{'ok ' if finding.ok else 'BAD'}  {finding.name:<{width}}  {finding.detail}")
        if not finding.ok:
            print_fn(f"{'':<{width + 5}}  fix: {finding.fix}")
    healthy = all(finding.ok for finding in findings)
    print_fn(
        "All good: the course can run here."
        if healthy
        else "Problems found: apply the fixes above."
    )
    return healthy
