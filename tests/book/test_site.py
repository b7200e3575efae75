"""The course's website (build/book/html, built by `make book`), checked by `make book-check`.

No exercise's solution is on it (the notebooks are the learner's edition), and in a real browser
(Debian's chromium, driven by playwright as in tests/test_browser.py) every page loads with no
console error, every image and video loads, every internal link and anchor resolves, and the
search finds "advantage". `make test` does not collect this folder (pyproject's --ignore): the site
must be built first.
"""

import functools
import html
import json
import re
import threading
import urllib.error
import urllib.parse
import urllib.request
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import nbformat
import pytest

import a3c_course
from a3c_course.lessons.exercises.solutions import BEGIN, END, EXERCISES, solution_source

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "build" / "book" / "html"
NOTEBOOKS = ROOT / "notebooks"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip


@pytest.fixture(scope="module")
def site() -> Path:
    assert (SITE / "index.html").is_file(), f"no site in {SITE}: run `make book` first"
    return SITE


def normalised(text: str) -> str:
    return " ".join(text.split())


def code_of(line: str) -> str:
    """A line's code, stripped, without its comment (kept where a quote is: # may be in a string)."""
    return line.split("#")[0].strip() if "'" not in line and '"' not in line else line.strip()


@functools.cache
def shown_on_purpose() -> frozenset[str]:
    """Every line of code the course shows on purpose: the package's modules (outside the
    solutions), which the notebooks print and compare with, and the learner's notebooks' code
    cells (the original code to fix, say). A solution line among them is not the solution's own."""
    package = Path(a3c_course.__file__).parent
    solutions = package / "lessons" / "exercises" / "solutions"
    sources = [p.read_text() for p in package.rglob("*.py") if solutions not in p.parents]
    for notebook in NOTEBOOKS.glob("*.ipynb"):
        cells = nbformat.read(notebook, as_version=4).cells
        sources += [cell.source for cell in cells if cell.cell_type == "code"]
    return frozenset(code_of(line) for source in sources for line in source.splitlines())


def solution_groups(exercise_id: str) -> list[str]:
    """What of the solution must not be on the site, whitespace normalised: its whole body, and
    each pair of consecutive lines of it with at least one line of its own (not shown on purpose
    elsewhere: the line that fixes the original, not the original's lines around it)."""
    source = solution_source(exercise_id)
    bodies = re.findall(rf"{re.escape(BEGIN)}[^\n]*\n(.*?)\n[ \t]*{re.escape(END)}", source, re.S)
    assert bodies, f"exercise {exercise_id}: no solution between the markers"
    groups = [normalised(body) for body in bodies]
    for body in bodies:
        lines = [line.strip() for line in body.splitlines()]
        lines = [line for line in lines if line and not line.startswith("#")]
        own = [code_of(line) not in shown_on_purpose() for line in lines]
        groups += [
            normalised(f"{lines[i]} {lines[i + 1]}")
            for i in range(len(lines) - 1)
            if own[i] or own[i + 1]
        ]
    return groups


def site_texts(site: Path) -> dict[str, str]:
    """Every page's text (tags stripped, so that highlighted code reads as code), and every cell of
    the notebooks the site offers for download, whitespace normalised."""
    texts = {}
    for page in site.rglob("*.html"):
        text = re.sub(r"<[^>]+>", "", page.read_text(encoding="utf-8"))
        texts[str(page.relative_to(site))] = normalised(html.unescape(text))
    for notebook in site.rglob("*.ipynb"):
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        texts[str(notebook.relative_to(site))] = normalised(
            "\n".join("".join(cell["source"]) for cell in cells)
        )
    return texts


def test_no_exercise_solution_is_on_the_site(site):
    texts = site_texts(site)
    everything = "\n".join(texts.values())
    # The check can see code: each exercise's stub (its signature) is on the site.
    for exercise_id in EXERCISES:
        signature = normalised(solution_source(exercise_id).splitlines()[0])
        assert signature in everything, f"exercise {exercise_id}'s stub is not on the site"
    found = {  # (exercise, page): the first group of its solution found there
        (exercise_id, name): group
        for exercise_id in EXERCISES
        for group in reversed(solution_groups(exercise_id))
        for name, text in texts.items()
        if group in text
    }
    listing = "\n".join(f"{where}: {group}" for where, group in found.items())
    assert found == {}, f"solutions on the site:\n{listing}"


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # a line per request would drown the report
        pass


@pytest.fixture(scope="module")
def server(site):
    """The site over HTTP on a free port of localhost, as GitHub Pages serves it."""
    handler = functools.partial(QuietHandler, directory=str(site))
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def browser():
    playwright_api = pytest.importorskip(
        "playwright.sync_api",
        reason="the site check needs the playwright package (pip install playwright)",
    )
    if not CHROMIUM.exists():
        pytest.skip(f"the site check needs chromium at {CHROMIUM} (apt-get install chromium)")
    with playwright_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


IMAGES_LOADED = """async () => Promise.all(Array.from(document.images, async img => {
    img.loading = "eager";
    await img.decode().catch(() => null);
    return {src: img.currentSrc || img.src, width: img.naturalWidth};
}))"""
VIDEO_DURATIONS = """async () => Promise.all(Array.from(document.querySelectorAll("video"), v =>
    new Promise(done => {
        const report = () => done({duration: v.duration, error: v.error && v.error.code});
        if (v.readyState >= 1 || v.error) return report();
        v.addEventListener("loadedmetadata", report);
        v.addEventListener("error", report, true);  // on the <source>: it does not bubble
        setTimeout(report, 20000);
        v.preload = "metadata";
        v.load();
    })))"""
LINKS = """() => Array.from(document.querySelectorAll("[href], [src]"),
    element => element.href || element.src).filter(url => typeof url === "string")"""


@pytest.mark.timeout(300)
def test_every_page_image_video_and_link_loads_in_a_browser(site, server, browser):
    pages = sorted(str(path.relative_to(site)) for path in site.rglob("*.html"))
    pages = [name for name in pages if not name.startswith("_static/")]  # the theme's templates
    units = {f"notebooks/{notebook.stem}.html" for notebook in NOTEBOOKS.glob("*.ipynb")}
    assert units | {"index.html", "search.html", "notebooks/glossary.html"} <= set(pages)
    problems, links, counts = [], set(), {"images": 0, "videos": 0}
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    now = {"page": ""}  # the page that the browser's events below come from

    def problem(what: str) -> None:
        problems.append(f"{now['page']}: {what}")

    page.on("console", lambda message: message.type == "error" and problem(message.text))
    page.on("pageerror", lambda error: problem(f"uncaught: {error}"))
    page.on("requestfailed", lambda request: problem(f"request failed: {request.url}"))
    for name in pages:
        now["page"] = name
        page.goto(f"{server}/{name}", wait_until="load")
        for image in page.evaluate(IMAGES_LOADED):
            counts["images"] += 1
            if not image["width"] > 0:
                problem(f"image not loaded: {image['src'][:100]}")
        for video in page.evaluate(VIDEO_DURATIONS):
            counts["videos"] += 1
            if video["error"] is not None or not video["duration"] > 0:
                problem(f"video does not play: {video}")
        page.wait_for_load_state("networkidle")  # MathJax's fonts: a failure is reported above
        links |= {url for url in page.evaluate(LINKS) if url.startswith(server)}
    page.close()
    print(f"{len(pages)} pages, {counts['images']} images, {counts['videos']} videos,"
          f" {len(links)} internal links")  # fmt: skip
    assert counts["videos"] >= 5 and counts["images"] >= 50, counts
    problems += broken_links(links, server)
    assert problems == [], "\n".join(dict.fromkeys(problems))


def broken_links(urls: set[str], server: str) -> list[str]:
    """Every internal URL answers 200 (after redirects), and every #anchor names an element of its
    page."""
    broken, bodies = [], {}
    for url in sorted(urls):
        address, _, anchor = url.partition("#")
        if address not in bodies:
            try:
                with urllib.request.urlopen(address, timeout=10) as response:
                    bodies[address] = response.read().decode("utf-8", "replace")
                    if response.status != 200:
                        broken.append(f"{address}: HTTP {response.status}")
            except urllib.error.URLError as error:  # HTTPError (404 ...) included
                bodies[address] = None
                broken.append(f"{address}: {error}")
        anchor = urllib.parse.unquote(anchor)
        body = bodies[address]
        if anchor and body is not None and f'id="{anchor}"' not in body:
            broken.append(f"{url}: no element with id {anchor!r}")
    return broken


def test_the_search_finds_advantage(server, browser):
    page = browser.new_page()
    page.goto(f"{server}/search.html?q=advantage")
    results = page.locator("#search-results ul.search li")
    results.first.wait_for(timeout=30_000)
    found = [link.get_attribute("href") for link in results.locator("a").all()]
    page.close()
    assert any("notebooks/03_gae.html" in href for href in found), found
