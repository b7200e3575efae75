"""A real browser, end to end in JupyterLab: the hyperparameter panel reacts to typing; notebook 04's
training panel trains, redraws its live curve and stops with no process left; its gameplay panel
plays a video; every course notebook opens with no JavaScript error. Needs Debian's chromium
(/usr/bin/chromium) and the `playwright` package (its own browser downloads are never used); skipped
with the reason when either is missing.

Screenshots are saved under tests/artifacts/ (A3C_TEST_ARTIFACTS overrides) and their paths printed.
"""

import json
import os
import re
import secrets
import shutil
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

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
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
    "from a3c_course.training.config import TrainConfig\nfrom a3c_course.lessons.panels import HyperparameterPanel",
    'panel = HyperparameterPanel(TrainConfig(game="CartPole-v1"))\npanel',
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def jupyter_lab(tmp_path_factory):
    """A JupyterLab server on localhost serving a folder with panel.ipynb and a copy of the course's
    notebooks/, one for this file's tests (a start costs seconds); yields (base URL, token, server
    pid) and shuts it down, its kernels with it, after the last."""
    tmp_path = tmp_path_factory.mktemp("lab")
    root = tmp_path / "root"
    root.mkdir()
    shutil.copytree(NOTEBOOKS, root / "notebooks")
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
        yield base, token, server.pid
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


def open_notebook(page, url: str) -> None:
    """Open a notebook in JupyterLab and wait until its kernel is up and idle. `reset`: a fresh
    workspace, not the one an earlier test left on the shared server (its notebook in front)."""
    page.goto(f"{url}&reset")
    page.wait_for_function(
        "() => window.jupyterapp && window.jupyterapp.shell.currentWidget"
        " && window.jupyterapp.shell.currentWidget.sessionContext"
        " && window.jupyterapp.shell.currentWidget.sessionContext.session",
        timeout=60_000,
    )
    page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget.sessionContext.kernelDisplayStatus"
        " === 'idle'",
        timeout=60_000,
    )


@pytest.mark.slow
def test_the_hyperparameter_panel_renders_and_reacts_in_jupyterlab(jupyter_lab):
    base, token, _ = jupyter_lab
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    screenshot = ARTIFACTS / "browser_hyperparameter_panel.png"
    with playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            open_notebook(page, f"{base}/lab/tree/panel.ipynb?token={token}")
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


RUN_CELLS = """async (indices) => {
    const notebook = window.jupyterapp.shell.currentWidget.content;
    for (const index of indices) {
        notebook.activeCellIndex = index;
        notebook.deselectAll();
        await window.jupyterapp.commands.execute('notebook:run-cell');
    }
}"""


def panel_cells(path: Path) -> list[int]:
    """The indices of the panel cells of notebook 04's core path (your own Pong agent: the settings
    and training panels where its training starts, the gameplay panel where it is watched), after
    the cells that define the names they use (FAST, PONG: constants in capitals), so that they run
    alone, in a fresh kernel."""
    cells = nbformat.read(path, as_version=4).cells
    end = next(
        i
        for i, c in enumerate(cells)
        if c.cell_type == "markdown" and c.source.startswith("## Summary")
    )  # the optional sections after the Summary hold panels of their own (Breakout)
    code = [i for i, cell in enumerate(cells) if cell.cell_type == "code"]
    panels = [i for i in code if i < end and "Panel(" in cells[i].source]
    names = set(re.findall(r"\b[A-Z][A-Z_]{2,}\b", "\n".join(cells[i].source for i in panels)))
    defining = [
        i
        for i in code
        if i < panels[0] and any(re.search(rf"^{n} = ", cells[i].source, re.M) for n in names)
    ]
    assert len(panels) == 3 and defining, f"notebook 04's panel section changed: {panels}"
    return defining + panels


def kernel_children(jupyter_lab, notebook: str) -> list[psutil.Process]:
    """The child processes (training workers, scoring pools) of the kernel that runs notebook (a
    path under the server's root): other tests' kernels may still be up on the shared server."""
    base, token, server_pid = jupyter_lab
    with urllib.request.urlopen(f"{base}/api/sessions?token={token}", timeout=10) as reply:
        sessions = json.load(reply)
    ids = [s["kernel"]["id"] for s in sessions if s["path"] == notebook]
    assert len(ids) == 1, sessions
    kernels = [  # the server's own children: forked workers carry the kernel's command line too
        p for p in psutil.Process(server_pid).children() if ids[0] in " ".join(p.cmdline())
    ]
    assert len(kernels) == 1, kernels
    return kernels[0].children(recursive=True)


@pytest.mark.slow
def test_notebook_04s_panels_train_stop_and_play_a_video(jupyter_lab):
    """Start the Pong run of notebook 04's core path from its training panel (fast mode: a
    1-minute budget), watch the live curve redraw, Stop it, and find no child process of the kernel
    left; then play the run's checkpoint in the gameplay panel."""
    base, token, _ = jupyter_lab
    notebook = "notebooks/04_async_training.ipynb"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            open_notebook(page, f"{base}/lab/tree/{notebook}?token={token}")
            page.evaluate(RUN_CELLS, panel_cells(NOTEBOOKS / Path(notebook).name))
            training = page.locator(".widget-vbox", has_text="Training").last
            start = training.locator("button", has_text="Start")
            start.wait_for(timeout=60_000)
            start.click()

            plot = training.locator(".widget-image")
            drawn = set()  # each redraw of the live curve is a new PNG
            deadline = time.monotonic() + 90
            while len(drawn) < 3 and time.monotonic() < deadline:
                if plot.count() and plot.first.get_attribute("src"):
                    drawn.add(plot.first.get_attribute("src"))
                time.sleep(0.25)
            assert len(drawn) >= 3, f"the live curve was drawn {len(drawn)} times in 90 s"
            assert len(kernel_children(jupyter_lab, notebook)) >= 2  # the workers train
            page.screenshot(path=str(ARTIFACTS / "browser_training_panel.png"), full_page=True)

            training.locator("button", has_text="Stop").click()
            training.locator(".widget-html", has_text="Stopped (interrupted)").wait_for(
                timeout=60_000
            )
            _, alive = psutil.wait_procs(kernel_children(jupyter_lab, notebook), timeout=10)
            assert alive == [], f"processes left after Stop: {alive}"

            gameplay = page.locator(".widget-vbox", has_text="Watch it play").last
            path = gameplay.locator(".widget-text", has_text="checkpoint").locator("input")
            path.fill(trained_checkpoint(page))
            path.press("Enter")
            gameplay.locator("button", has_text="Play").click()
            video = gameplay.locator("video")
            video.wait_for(timeout=90_000)
            state = video.evaluate(
                """v => new Promise(done => {
                    const report = () => done({duration: v.duration, error: v.error && v.error.code});
                    if (v.readyState >= 1) report();
                    v.addEventListener('loadedmetadata', report);
                    v.addEventListener('error', report);
                })"""
            )
            assert state["error"] is None and state["duration"] > 0, state
            assert "score" in gameplay.locator(".widget-html", has_text="episode 1").inner_text()
            page.screenshot(path=str(ARTIFACTS / "browser_gameplay_panel.png"), full_page=True)
        finally:
            browser.close()


def trained_checkpoint(page) -> str:
    """The checkpoint of the run the training panel just stopped, as its result says."""
    text = page.locator(".widget-html", has_text="Checkpoint:").last.inner_text()
    return re.search(r"Checkpoint: (\S+checkpoint\.pt)", text).group(1)


@pytest.mark.slow
def test_every_course_notebook_opens_without_a_javascript_error(jupyter_lab):
    """A console error or an uncaught exception fails; an image from another host that this
    offline machine cannot fetch (the Colab badge) is a network failure, listed, not an error."""
    base, token, _ = jupyter_lab
    errors, offline = [], []

    def on_console(message):
        if message.type != "error":
            return
        url = message.location.get("url", "")
        external = url.startswith("http") and not url.startswith(base)
        (offline if external else errors).append(f"{message.text} ({url})")

    with playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.on("console", on_console)
            page.on("pageerror", lambda error: errors.append(str(error)))
            for path in sorted(NOTEBOOKS.glob("*.ipynb")):
                open_notebook(page, f"{base}/lab/tree/notebooks/{path.name}?token={token}")
                page.wait_for_function(
                    "name => window.jupyterapp.shell.currentWidget.context.path.endsWith(name)"
                    " && window.jupyterapp.shell.currentWidget.content.widgets.length > 0",
                    arg=path.name,
                    timeout=30_000,
                )
                page.wait_for_timeout(1000)  # late renderers (widgets, math) report here
                assert errors == [], f"{path.name}: {errors}"
            page.screenshot(path=str(ARTIFACTS / "browser_notebook_opened.png"))
        finally:
            browser.close()
    print("not fetched (offline):", *sorted(set(offline)), sep="\n  ")
