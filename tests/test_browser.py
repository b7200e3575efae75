"""A real browser: JupyterLab renders the hyperparameter panel, and typing a bad value shows its
error in place. Needs Debian's chromium (/usr/bin/chromium) and the `playwright` package (its own
browser downloads are never used); skipped with the reason when either is missing.

The screenshot is saved under tests/artifacts/ (A3C_TEST_ARTIFACTS overrides) and its path printed.
"""

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import psutil
import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = Path(os.environ.get("A3C_TEST_ARTIFACTS", Path(__file__).parent / "artifacts"))

playwright_api = pytest.importorskip(
    "playwright.sync_api",
    reason="the browser test needs the playwright package (pip install playwright)",
)
pytestmark = [
    pytest.mark.skipif(
        not CHROMIUM.exists(),
        reason=f"the browser test needs chromium at {CHROMIUM} (apt-get install chromium)",
    ),
    pytest.mark.timeout(180),
]

PANEL_CELLS = [
    "from a3c_course.config import TrainConfig\nfrom a3c_course.widgets import HyperparameterPanel",
    'panel = HyperparameterPanel(TrainConfig(game="CartPole-v1"))\npanel',
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def jupyter_lab(tmp_path):
    """A JupyterLab server on localhost serving tmp_path/root with panel.ipynb; shut down after."""
    root = tmp_path / "root"
    root.mkdir()
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in PANEL_CELLS])
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(notebook, root / "panel.ipynb")
    port, token = free_port(), secrets.token_hex(16)
    env = dict(
        os.environ,
        JUPYTER_CONFIG_DIR=str(tmp_path / "config"),
        JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
    )
    server = subprocess.Popen(
        [
            sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
            f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
            "--ServerApp.port_retries=0", "--LabApp.expose_app_in_browser=True",
            "--LabApp.news_url=None",
            "--LabApp.check_for_updates_class=jupyterlab.handlers.announcements.NeverCheckForUpdate",
            *(["--allow-root"] if getattr(os, "geteuid", lambda: 1)() == 0 else []),  # containers and CI run as root
        ],
        stdout=subprocess.DEVNULL,
        stderr=open(tmp_path / "server.log", "w"),
        env=env,
        start_new_session=True,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None, (tmp_path / "server.log").read_text()[-2000:]
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2)
                break
            except OSError:
                assert time.monotonic() < deadline, "JupyterLab did not start in 60 s"
                time.sleep(0.5)
        yield base, token
    finally:
        processes = []
        try:
            server_process = psutil.Process(server.pid)
            processes = [server_process, *server_process.children(recursive=True)]  # kernels too
        except psutil.NoSuchProcess:
            pass
        try:  # a clean shutdown stops the kernels too
            request = urllib.request.Request(f"{base}/api/shutdown?token={token}", method="POST")
            urllib.request.urlopen(request, timeout=5)
            server.wait(15)
        except (OSError, subprocess.TimeoutExpired):
            os.killpg(server.pid, signal.SIGTERM)
        _, alive = psutil.wait_procs(processes, timeout=10)
        for process in alive:
            process.kill()
        psutil.wait_procs(alive, timeout=5)


def test_the_hyperparameter_panel_renders_and_reacts_in_jupyterlab(jupyter_lab):
    base, token = jupyter_lab
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    screenshot = ARTIFACTS / "browser_hyperparameter_panel.png"
    with playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.goto(f"{base}/lab/tree/panel.ipynb?token={token}")
            page.wait_for_function(
                "() => window.jupyterapp && window.jupyterapp.shell.currentWidget"
                " && window.jupyterapp.shell.currentWidget.sessionContext"
                " && window.jupyterapp.shell.currentWidget.sessionContext.session",
                timeout=60_000,
            )
            page.wait_for_function(  # the kernel is up and idle
                "() => window.jupyterapp.shell.currentWidget.sessionContext.kernelDisplayStatus"
                " === 'idle'",
                timeout=60_000,
            )
            page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")

            # The widgets render: sliders and the summary line the panel computes in the kernel.
            sliders = page.locator(".widget-slider")
            sliders.first.wait_for(timeout=60_000)
            assert sliders.count() >= 7  # lr, gamma, lambda, entropy, workers, envs, rollout
            message = page.locator(".widget-html", has_text="CartPole-v1: 2 workers")
            message.wait_for(timeout=30_000)
            assert "30 min" in message.inner_text()

            # Typing a bad budget shows the validation error in place (a kernel round trip).
            minutes = page.locator(".widget-text", has_text="budget: minutes").locator("input")
            minutes.fill("-5")
            minutes.press("Enter")
            error = page.locator(".widget-html", has_text="max_minutes must be")
            error.wait_for(timeout=30_000)
            assert "positive number of minutes, or None, got -5.0" in error.inner_text()
            page.screenshot(path=str(ARTIFACTS / "browser_hyperparameter_panel_error.png"))

            # A good value brings the summary back, with the new budget.
            minutes.fill("7")
            minutes.press("Enter")
            page.locator(".widget-html", has_text="7 min").wait_for(timeout=30_000)

            # Moving a slider with the keyboard changes the config the panel builds.
            gamma = page.locator(".widget-slider", has_text="discount").locator(".noUi-handle")
            gamma.focus()
            for _ in range(4):
                gamma.press("ArrowLeft")
            page.locator(".widget-html", has_text="γ 0.986").wait_for(timeout=30_000)
            page.screenshot(path=str(screenshot), full_page=True)
        finally:
            browser.close()
    print(f"screenshot: {screenshot}")
    assert screenshot.stat().st_size > 10_000
