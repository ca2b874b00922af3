"""Check a built book: build the smoke book once per test session, serve it, inspect pages in Chromium.

Used by the book's tests (notebook outputs, browser checks) and usable by hand:
``python -m tests.support.book DIR`` builds the smoke book in DIR and prints the page checks.
"""

from __future__ import annotations

import contextlib
import csv
import functools
import hashlib
import http.server
import json
import re
import sys
import threading
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from medibio.book import build
from medibio.book.chapters import CHAPTERS, execution_order
from medibio.core.settings import Settings

REPORT = "smoke-build.json"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync")


def smoke_book(base: Path, settings: Settings | None = None) -> dict[str, Any]:
    """Build the smoke book under ``base`` (staged root, results in ``base/results``; data root and cache of
    ``settings``) unless a previous call in this session already did; return the build report as a dict."""
    marker = base / REPORT
    if marker.is_file():
        return json.loads(marker.read_text(encoding="utf-8"))
    root = build.book_root(base)
    settings = (settings or Settings.from_env()).replace(results_root=base / "results")
    report = build.build_book("smoke", settings, root=root, keep_going=True).to_dict()
    report["root"] = str(root)
    report["results_root"] = str(base / "results")
    marker.write_text(json.dumps(report, indent=2), encoding="utf-8")
    return report


_GLUE_ROLE = re.compile(r"\{glue(?::\w+)?\}`([^`]+)`")


def notebook_glue_keys(path: Path) -> set[str]:
    """The glue keys the markdown cells of a notebook name (``{glue:text}`key:fmt` ``, ``{glue}`key` ``...)."""
    import nbformat

    cells = nbformat.read(str(path), as_version=4).cells
    return {re.sub(r":[^:]*$", "", match) if match.count(":") == 1 else match
            for cell in cells if cell.cell_type == "markdown" for match in _GLUE_ROLE.findall(cell.source)}


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - signature of the base class
        pass


@contextlib.contextmanager
def serve(directory: Path) -> Iterator[str]:
    """Serve ``directory`` on a free localhost port in a thread; yield its base URL."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@dataclass
class PageCheck:
    """What the browser saw on one page."""

    slug: str
    url: str
    title: str = ""
    h1: str = ""
    tables: int = 0
    images: int = 0
    broken_images: list[str] = field(default_factory=list)
    math: int = 0
    math_errors: int = 0
    mathjax_loaded: bool = False
    external_requests: list[str] = field(default_factory=list)
    failed_requests: list[str] = field(default_factory=list)
    screenshot: str = ""
    # the data tables of cell outputs, each followed by its download links: [[link text, href, HTTP status], ...]
    table_downloads: list[list[list[Any]]] = field(default_factory=list)


_PAGE_PROBE = """
async () => {
  const main = document.querySelector('main') || document.body;
  const imgs = Array.from(main.querySelectorAll('img'));
  await Promise.all(imgs.map(i => i.complete ? null : new Promise(r => { i.onload = r; i.onerror = r; })));
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) { await MathJax.startup.promise; }
  const h1 = main.querySelector('h1');
  return {
    title: document.title,
    h1: h1 ? h1.textContent.replace(/#\\s*$/, '').trim() : '',
    tables: main.querySelectorAll('table').length,
    images: imgs.length,
    broken: imgs.filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.getAttribute('src')),
    math: document.querySelectorAll('mjx-container').length,
    mathErrors: document.querySelectorAll('mjx-merror, .MathJax_Error').length,
    mathjax: !!(window.MathJax && MathJax.version),
    downloads: await Promise.all(Array.from(main.querySelectorAll('.output.text_html table')).map(async t => {
      const after = t.closest('.output').nextElementSibling;
      const links = after ? Array.from(after.querySelectorAll('a.download')) : [];
      return Promise.all(links.map(async a => [a.textContent.trim(), a.getAttribute('href'),
                                                (await fetch(a.href)).status]));
    })),
  };
}
"""


def check_pages(html_dir: Path, screenshot_dir: Path | None = None) -> list[PageCheck]:
    """Open every chapter of a built book in headless Chromium and report what each page shows."""
    from playwright.sync_api import sync_playwright

    checks: list[PageCheck] = []
    with serve(html_dir) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=list(CHROMIUM_ARGS))
        try:
            for chapter in CHAPTERS:
                url = f"{base}/book/{chapter.slug}.html"
                check = PageCheck(chapter.slug, url)
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                page.on("request", lambda req, c=check: _note_request(req.url, base, c))
                page.on("requestfailed", lambda req, c=check: c.failed_requests.append(req.url))
                response = page.goto(url, wait_until="networkidle")
                if response is None or not response.ok:
                    check.failed_requests.append(url)
                probe = page.evaluate(_PAGE_PROBE)
                check.title, check.h1 = probe["title"], probe["h1"]
                check.tables, check.images = probe["tables"], probe["images"]
                check.broken_images = probe["broken"]
                check.math, check.math_errors = probe["math"], probe["mathErrors"]
                check.mathjax_loaded = probe["mathjax"]
                check.table_downloads = probe["downloads"]
                if screenshot_dir is not None:
                    screenshot_dir.mkdir(parents=True, exist_ok=True)
                    shot = screenshot_dir / f"{chapter.slug}.png"
                    page.screenshot(path=str(shot), full_page=True)
                    check.screenshot = str(shot)
                page.close()
                checks.append(check)
        finally:
            browser.close()
    return checks


@dataclass
class RunPageCheck:
    """What the browser saw after following a table cell's link to a run page and using its controls."""

    link: str = ""  # the href of the cell followed
    url: str = ""  # where it led
    h1: str = ""
    total: int = 0  # examples the page lists
    correct: int = 0  # rows left by the "correct" filter (all rows marked right?)
    incorrect: int = 0
    correct_rows_right: bool = False
    incorrect_rows_wrong: bool = False
    searched: str = ""  # an id typed into the search box
    found_ids: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)


def _shown_count(page: Any) -> int:
    return int(page.inner_text("#count").split(" of ")[0])


def check_run_page(html_dir: Path, chapter: str = "table_7_blurb_comparison",
                   caption: str = "Table 7 columns next to ours") -> RunPageCheck:
    """Follow the first link of the table of ``chapter`` whose caption holds ``caption`` to its run page,
    then use the page's correct/incorrect filter and its search by id, noting console errors there."""
    from playwright.sync_api import sync_playwright

    check = RunPageCheck()
    with serve(html_dir) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=list(CHROMIUM_ARGS))
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(f"{base}/book/{chapter}.html", wait_until="networkidle")
            link = page.locator(f"table:has(caption:has-text('{caption}')) a[href*='runs/']").first
            check.link = link.get_attribute("href") or ""
            page.on("console", lambda m: check.console_errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda exc: check.console_errors.append(str(exc)))
            link.click()
            page.wait_for_load_state("load")
            check.url, check.h1 = page.url, page.inner_text("h1")
            page.wait_for_selector("#examples-body tr")
            check.total = _shown_count(page)
            for name in ("correct", "incorrect"):
                page.select_option("#filter", name)
                classes = page.eval_on_selector_all("#examples-body tr", "rows => rows.map(r => r.className)")
                setattr(check, name, _shown_count(page))
                wanted = "right" if name == "correct" else "wrong"
                setattr(check, f"{name}_rows_{wanted}", all(c == wanted for c in classes))
            page.select_option("#filter", "all")
            check.searched = page.get_attribute("#examples-body tr:last-child", "data-id") or ""
            page.fill("#search", check.searched)
            check.found_ids = page.eval_on_selector_all("#examples-body tr", "rows => rows.map(r => r.dataset.id)")
            page.close()
        finally:
            browser.close()
    return check


def _note_request(url: str, base: str, check: PageCheck) -> None:
    parsed = urlparse(url)
    if parsed.scheme in ("data", "blob", "about"):
        return
    if not url.startswith(base):
        check.external_requests.append(url)


PINNED_BOOK = Path(__file__).resolve().parents[1] / "fixtures" / "cpu-book-reference.json"
# What a build from the recorded runs shows that depends on the machine or the environment rather than on the
# runs: Appendix B's environment and library versions; in its run index the
# freshness, which says what this CPU would decide (its precision); each page's provenance line (the lock digest)
MACHINE_TABLES = {"appendix_b_reproducibility": {"environment", "versions"}}
MACHINE_COLUMNS = {("appendix_b_reproducibility", "runs"): {"freshness", "changed"}}
MACHINE_VALUES = {"built", "freshness_reading"}  # which records are stale depends on the CPU that plans them again


def _table_digest(path: Path, dropped: set[str]) -> str:
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    keep = [i for i, name in enumerate(rows[0] if rows else []) if name not in dropped]
    text = "\n".join(",".join(row[i] for i in keep) for row in rows)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def book_snapshot(results_root: Path, profile: str = "cpu") -> dict[str, Any]:
    """Per chapter of a built book: every value it recorded and a digest of every table's CSV download (the
    machine's own tables, columns and values left out: :data:`MACHINE_TABLES`)."""
    out: dict[str, Any] = {}
    for summary in sorted((Path(results_root) / "book" / profile).glob("*/summary.json")):
        data = json.loads(summary.read_text(encoding="utf-8"))
        chapter = data["chapter"]
        tables = {name: _table_digest(summary.parent / "tables" / f"{name}.csv",
                                      MACHINE_COLUMNS.get((chapter, name), set()))
                  for name in sorted(data["tables"]) if name not in MACHINE_TABLES.get(chapter, set())
                  and (summary.parent / "tables" / f"{name}.csv").is_file()}
        out[chapter] = {"values": {k: v for k, v in data["values"].items() if k not in MACHINE_VALUES},
                        "tables": tables}
    return out


def main(argv: list[str] | None = None) -> None:
    args = argv if argv is not None else sys.argv[1:]
    if args[:1] == ["pin"]:  # python -m tests.support.book pin <results root of a cpu build from reference/>
        PINNED_BOOK.write_text(json.dumps(book_snapshot(Path(args[1])), indent=1, sort_keys=True) + "\n",
                               encoding="utf-8")
        return
    base = Path(args[0] if args else "_build/smoke-check").resolve()
    report = smoke_book(base)
    for chapter in report["chapters"]:
        print(chapter["slug"], chapter["status"], f"{chapter['seconds']:.1f}s", chapter.get("error") or "")
    if report.get("html_dir"):
        for check in check_pages(Path(report["html_dir"]), base / "screenshots"):
            print(json.dumps(asdict(check)))


# What each chapter runs when CI executes a big profile under --limit: every kind of training the chapter does
# (each problem type, IFT, STILT, SciERC, pretraining and the five Table 5 experiments), on fewer tasks and seeds
# than the profile would pick, so that the whole book fits the CI budget on two CPU cores.
LIMITED_TASKS = ["BIOSSES", "NCBI-disease", "ChemProt", "HoC", "PubMedQA"]  # one per problem type
LIMITED_PLAN: dict[str, dict[str, Any]] = {
    # one seed: each run is a two-process launch of the gpu preset's 30 epochs (80 s on a 2-core CPU without bf16)
    "tables_5_6_pretraining_configurations": {"tasks": ["BIOSSES"], "seeds": [1], "table5_experiments": True},
    "tables_1_2_intermediate_finetuning": {"seeds": [1], "stilt_tasks": ["BIOSSES", "PubMedQA"], "stilt_seeds": [1]},
    "table_7_blurb_comparison": {"tasks": LIMITED_TASKS, "seeds": [1]},
    "table_4_scierc": {"seeds": [1]},
}


def limited_book(base: Path, profile: str = "gpu", limit: int = 4, processes: int = 2,
                 plan: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """Execute every chapter with ``profile`` under ``--limit`` and ``--processes`` into ``base``; return a
    report (status, seconds and error per chapter). Hub names must resolve: run it with ``HF_HOME`` pointing
    at a filled cache (:mod:`tests.support.hub_cache`) and ``HF_HUB_OFFLINE=1`` in the environment."""
    plan = LIMITED_PLAN if plan is None else plan
    settings = Settings.from_env(results_root=base / "results", limit=limit, processes=processes)
    root = build.book_root(base / "root")
    report: dict[str, Any] = {"profile": profile, "limit": limit, "processes": processes,
                              "results_root": str(base / "results"), "chapters": {}}
    for chapter in execution_order(CHAPTERS):  # the index page last: it reads the other chapters
        if not chapter.is_notebook:
            continue
        results = build.execute_all(profile, settings, book_dir=root / "book", only=[chapter.slug],
                                    extra=plan.get(chapter.slug, {}))
        result = next(r for r in results if r.slug == chapter.slug)
        report["chapters"][chapter.slug] = {"status": result.status, "seconds": round(result.seconds, 1),
                                            "error": result.error, "cell": result.cell_source}
        print(f"{chapter.slug}: {result.status} ({result.seconds:.0f} s) {result.error or ''}", flush=True)
    (base / "limited-book.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    return report


if __name__ == "__main__":
    main()
