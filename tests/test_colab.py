"""The notebooks' setup cell: installs the course only inside Colab, silent no-op elsewhere."""

import json
import sys
import types
from pathlib import Path

import nbformat
import pytest
from IPython.core.interactiveshell import InteractiveShell

from a3c_course.lessons import colab

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import sync_colab  # noqa: E402  (tools/sync_colab.py, the author's tool that rewrites them)

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
RESYNC = "run `python tools/sync_colab.py` to resync"


def run_setup_cell(
    monkeypatch, in_colab: bool, cell: str = colab.SETUP_CELL
) -> tuple[list[str], list[str]]:
    """Run a setup cell in a real IPython shell; return the %pip lines and Colab calls it made."""
    pip_lines, colab_calls = [], []
    if in_colab:
        output = types.SimpleNamespace(
            enable_custom_widget_manager=lambda: colab_calls.append("widgets")
        )
        google = types.ModuleType("google")
        google.colab = types.ModuleType("google.colab")
        google.colab.output = output
        monkeypatch.setitem(sys.modules, "google", google)
        monkeypatch.setitem(sys.modules, "google.colab", google.colab)
    else:
        monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    shell = InteractiveShell.instance()
    shell.register_magic_function(pip_lines.append, magic_kind="line", magic_name="pip")
    result = shell.run_cell(cell, store_history=False)
    result.raise_error()
    return pip_lines, colab_calls


def test_in_colab_installs_the_course_from_its_repository(monkeypatch, capsys):
    pip_lines, colab_calls = run_setup_cell(monkeypatch, in_colab=True)
    assert pip_lines == [
        f'install --quiet "a3c-course @ git+{colab.COURSE_REPOSITORY}@{colab.COURSE_REF}"'
    ]
    assert colab_calls == ["widgets"]
    assert capsys.readouterr().out == ""  # nothing that this session loaded was replaced


def test_no_restart_is_asked_for_when_the_loaded_packages_are_the_installed_ones():
    import ipywidgets  # noqa: F401  (the packages a Colab session has loaded)
    import matplotlib  # noqa: F401
    import numpy  # noqa: F401
    import torch  # noqa: F401
    import traitlets  # noqa: F401

    assert not colab.restart_needed()


def test_a_loaded_package_replaced_by_pip_asks_for_a_restart_in_words(monkeypatch, capsys):
    from importlib.metadata import version

    monkeypatch.setitem(sys.modules, "numpy", types.SimpleNamespace(__version__="1.0.0"))
    assert colab.restart_needed()
    printed = capsys.readouterr().out
    assert f"numpy 1.0.0 -> {version('numpy')}" in printed
    assert "Restart the session (Runtime > Restart session)" in printed


def test_outside_colab_it_does_nothing(monkeypatch, capsys):
    pip_lines, colab_calls = run_setup_cell(monkeypatch, in_colab=False)
    assert pip_lines == [] and colab_calls == []
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("in_colab", [True, False])
def test_unit5s_cell_adds_the_cluster_extra_in_colab_and_says_when_ray_is_missing_elsewhere(monkeypatch, capsys, in_colab):
    pip_lines, _ = run_setup_cell(monkeypatch, in_colab, colab.CLUSTER_CELL)
    expected = f'install --quiet "a3c-course[cluster] @ git+{colab.COURSE_REPOSITORY}@{colab.COURSE_REF}"'
    assert pip_lines == ([expected] if in_colab else [])
    assert capsys.readouterr().out == ""
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)  # Ray not installed
    run_setup_cell(monkeypatch, False, colab.CLUSTER_CELL)
    assert 'Ray is missing: `pip install "a3c-course[cluster]"`' in capsys.readouterr().out
    unit5 = nbformat.read(NOTEBOOKS[0].parent / "05_beyond_one_machine.ipynb", as_version=4)
    code_cells = [cell.source for cell in unit5.cells if cell.cell_type == "code"]
    assert code_cells[1] == colab.CLUSTER_CELL, RESYNC


def test_the_install_keeps_colabs_torch():
    # No torch pin in the install line: the package's loose range accepts the torch Colab ships.
    assert "torch" not in colab.SETUP_CELL


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_notebook_opens_with_the_setup_cell_and_a_colab_badge(path):
    notebook = nbformat.read(path, as_version=4)
    first_code = next(cell for cell in notebook.cells if cell.cell_type == "code")
    assert first_code.source == colab.SETUP_CELL, RESYNC
    assert (
        f"colab.research.google.com/github/{colab.GITHUB_PATH}/blob/{colab.COURSE_REF}/notebooks/"
        f"{path.name}" in notebook.cells[0].source
    )


def test_readme_has_a_colab_badge_for_every_notebook():
    readme = (ROOT / "README.md").read_text()
    for path in NOTEBOOKS:
        assert (
            f"colab.research.google.com/github/{colab.GITHUB_PATH}/blob/{colab.COURSE_REF}/"
            f"notebooks/{path.name}" in readme
        )


def test_sync_rewrites_setup_cells_and_badges_for_a_fork(tmp_path, monkeypatch):
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    old = "colab.research.google.com/github/someone/old-fork/blob/main/notebooks/x.ipynb"
    cells = [
        nbformat.v4.new_markdown_cell(f"[badge](https://{old})"),
        nbformat.v4.new_code_cell("# Setup: in Google Colab, old text"),
        nbformat.v4.new_code_cell("# Unit 5 needs Ray, old text"),
    ]
    nbformat.write(nbformat.v4.new_notebook(cells=cells), notebooks / "x.ipynb")
    (tmp_path / "README.md").write_text(f"[badge](https://{old})")
    monkeypatch.setattr(colab, "GITHUB_PATH", "me/my-fork")
    monkeypatch.setattr(colab, "COURSE_REF", "v1.2")  # a fork that pins its release
    changed = sync_colab.sync_setup_cells(notebooks)
    assert sorted(p.name for p in changed) == ["README.md", "x.ipynb"]
    synced = nbformat.read(notebooks / "x.ipynb", as_version=4)
    assert "github/me/my-fork/blob/v1.2/notebooks/x.ipynb" in synced.cells[0].source
    assert synced.cells[1].source == colab.SETUP_CELL
    assert synced.cells[2].source == colab.CLUSTER_CELL
    assert "github/me/my-fork/blob/v1.2/" in (tmp_path / "README.md").read_text()
    assert colab.SETUP_CELL.startswith(sync_colab.SETUP_MARKER)  # so the next sync finds it
    assert sync_colab.sync_setup_cells(notebooks) == []  # idempotent


def test_the_sync_tool_says_when_nothing_needed_changing(tmp_path, capsys):
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    cells = [nbformat.v4.new_markdown_cell(f"[badge](https://{sync_colab.badge_target()}x.ipynb)"),
             nbformat.v4.new_code_cell(colab.SETUP_CELL)]  # fmt: skip
    nbformat.write(nbformat.v4.new_notebook(cells=cells), notebooks / "x.ipynb")
    assert sync_colab.main(str(notebooks)) == 0
    assert capsys.readouterr().out.startswith("nothing to change")
    assert sync_colab.main(str(tmp_path / "missing")) == 2


def fake_colab_files(monkeypatch) -> list[str]:
    """Colab's google.colab.files in sys.modules (so in_colab() is True); the paths its download()
    was called with."""
    downloads = []
    google = types.ModuleType("google")
    google.colab = types.ModuleType("google.colab")
    google.colab.files = types.SimpleNamespace(download=downloads.append)
    monkeypatch.setitem(sys.modules, "google", google)
    monkeypatch.setitem(sys.modules, "google.colab", google.colab)
    return downloads


@pytest.fixture
def cartpole_run(tmp_path):
    """A run folder as training leaves it: checkpoint, config, metrics."""
    import torch

    from a3c_course.a3c.model import ActorCritic
    from a3c_course.training.checkpoint import save_checkpoint
    from a3c_course.training.config import TrainConfig

    torch.manual_seed(0)
    config = TrainConfig(game="CartPole-v1", hidden_size=8)
    folder = tmp_path / "runs" / "cartpole"
    save_checkpoint(folder / "checkpoint.pt", ActorCritic((4,), 2, 8), config, steps=1234)
    (folder / "config.json").write_text(json.dumps(config.to_dict()))
    (folder / "metrics.jsonl").write_text('{"kind": "episode", "steps": 20, "score": 20.0}\n')
    return folder


@pytest.mark.parametrize("mounted", [True, False])
def test_keeping_a_run_in_colab_downloads_the_zip_and_says_where_drive_is(
    monkeypatch, tmp_path, cartpole_run, mounted
):
    from a3c_course.lessons.keep_run import DRIVE_FOLDER
    from a3c_course.lessons.panels import GameplayPanel

    assert not colab.in_colab()
    downloads = fake_colab_files(monkeypatch)
    assert colab.in_colab()
    panel = GameplayPanel("CartPole-v1", str(cartpole_run / "checkpoint.pt"), video_dir=tmp_path)
    panel.keeper.drive_root = tmp_path / "MyDrive"
    if mounted:
        panel.keeper.drive_root.mkdir()
    panel.keeper.button.click()
    zip_path = tmp_path / "runs" / "cartpole-1234-steps.zip"
    assert downloads == [str(zip_path)] and zip_path.is_file()
    message = panel.keeper.message.value
    assert "Your browser downloads it now." in message
    on_drive = tmp_path / "MyDrive" / DRIVE_FOLDER / zip_path.name
    assert on_drive.is_file() == mounted
    assert (f"Copied to Google Drive: {on_drive}" in message) == mounted
    mount = "drive.mount(&#x27;/content/drive&#x27;)"  # the line to run, html-escaped
    assert (f"from google.colab import drive; {mount}" in message) == (not mounted)
    assert colab.DRIVE_MOUNT == "from google.colab import drive; drive.mount('/content/drive')"


def test_a_failed_colab_download_still_says_where_the_zip_is(monkeypatch, tmp_path, cartpole_run):
    from a3c_course.lessons.panels import GameplayPanel

    def refuse(path):
        raise FileNotFoundError(path)

    InteractiveShell.instance()  # as in a kernel, where an Output widget swallows exceptions
    fake_colab_files(monkeypatch)
    monkeypatch.setattr(sys.modules["google.colab"].files, "download", refuse)
    panel = GameplayPanel("CartPole-v1", str(cartpole_run / "checkpoint.pt"), video_dir=tmp_path)
    panel.keeper.drive_root = tmp_path / "no-drive"
    assert panel.keep() is True
    assert "The download did not start" in panel.keeper.message.value
    assert "Colab&#x27;s Files pane" in panel.keeper.message.value
