"""The rendered smoke book, opened in headless Chromium: titles, tables, images, offline MathJax.

The book is served from localhost; any request to another host fails the test (MathJax and every other
asset must come from the book itself). Screenshots of every page go to the session's temporary folder.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from medibio.book import chapters, notebook
from medibio.book.assets import MATHJAX_ENTRY
from tests.support import book as testing

pytestmark = [pytest.mark.slow, pytest.mark.realdata]

PAGES_WITH_MATH = ("intro", "figures_2_4_field_correlation", "table_3_pretraining")


@pytest.fixture(scope="module")
def pages(tmp_path_factory, smoke) -> dict[str, testing.PageCheck]:
    if not Path(testing.CHROMIUM).exists() or shutil.which("chromium") is None:
        if os.environ.get("MEDIBIO_REQUIRE_DATA", "") not in ("", "0", "false", "False"):  # CI
            pytest.fail("Chromium is missing (.ci/run installs it with apt-get)")
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    assert smoke["html_dir"], "the smoke book did not render"
    checks = testing.check_pages(Path(smoke["html_dir"]), tmp_path_factory.getbasetemp() / "screenshots")
    return {c.slug: c for c in checks}


@pytest.fixture(scope="module")
def summaries(pages, smoke) -> dict[str, dict]:
    results = Path(smoke["results_root"])
    return {c.slug: notebook.read_summary(results, "smoke", c.slug) for c in chapters.CHAPTERS if c.is_notebook}


@pytest.mark.parametrize("chapter", chapters.CHAPTERS, ids=lambda c: c.slug)
def test_page_shows_title_tables_and_images(pages, summaries, chapter) -> None:
    page = pages[chapter.slug]
    assert page.h1 == chapter.title
    # numbered parts: the browser title reads "3. SciERC (Table 4) — <book title>"
    assert re.sub(r"^\d+(\.\d+)*\.\s+", "", page.title).startswith(chapter.title), page.title
    assert not page.failed_requests, page.failed_requests
    assert not page.external_requests, f"fetched from outside the book: {page.external_requests}"
    assert not page.broken_images, f"images that did not load: {page.broken_images}"
    if chapter.is_notebook:
        summary = summaries[chapter.slug]
        assert page.tables >= len(summary["tables"]), "a recorded table is missing from the page"
        assert page.images >= len(summary["figures"]), "a recorded figure is missing from the page"
    assert Path(page.screenshot).stat().st_size > 10_000


@pytest.mark.parametrize("chapter", [c for c in chapters.CHAPTERS if c.is_notebook], ids=lambda c: c.slug)
def test_every_table_has_its_csv_and_json_and_they_load(pages, summaries, chapter) -> None:
    page = pages[chapter.slug]
    assert len(page.table_downloads) == len(summaries[chapter.slug]["tables"]) > 0
    for links in page.table_downloads:
        assert [text for text, _, _ in links] == ["CSV", "JSON"], links
        for text, href, status in links:
            assert href.startswith("../_downloads/") and href.endswith(f".{text.lower()}"), href
            assert status == 200, href


@pytest.mark.parametrize("slug", PAGES_WITH_MATH)
def test_equations_render_with_the_local_mathjax(pages, slug) -> None:
    page = pages[slug]
    assert page.mathjax_loaded, "MathJax did not load"
    assert page.math > 0, "no equation was typeset"
    assert page.math_errors == 0


def test_mathjax_is_served_from_the_book(pages, smoke) -> None:
    html = Path(smoke["html_dir"])
    assert (html / "_static" / "mathjax" / MATHJAX_ENTRY).is_file()
    intro = (html / "book" / "intro.html").read_text(encoding="utf-8")
    assert f"_static/mathjax/{MATHJAX_ENTRY}" in intro
    assert "cdn.jsdelivr" not in intro and "cdnjs" not in intro


@pytest.fixture(scope="module")
def run_page(pages, smoke) -> testing.RunPageCheck:
    html = Path(smoke["html_dir"])
    return testing.check_run_page(html)


def test_a_table_7_cell_leads_to_its_run_page(run_page) -> None:
    assert run_page.link.startswith("../runs/finetune/smoke/"), run_page.link
    assert run_page.url.endswith(run_page.link.removeprefix("..")), run_page.url
    assert "(finetune, smoke)" in run_page.h1


def test_the_run_page_filters_by_correctness_and_finds_an_id(run_page) -> None:
    assert run_page.total > 0
    assert run_page.correct + run_page.incorrect == run_page.total
    assert run_page.correct_rows_right and run_page.incorrect_rows_wrong
    assert run_page.searched and run_page.searched in run_page.found_ids
    assert all(run_page.searched in i for i in run_page.found_ids)


def test_the_run_page_has_no_console_errors(run_page) -> None:
    assert run_page.console_errors == []


# --------------------------------------------------------------------------- the cpu book, rendered from reference/
# What a reader meets on the default book: each page opens with its result, and nothing on it is for the builder.

FIRST_SCREEN = {"width": 1400, "height": 900}
BUILDER_TEXT = re.compile(r"Warning|/tmp/|/home/|/root/|/work/")
MAX_PAGE_BYTES = 1_000_000

NARROW_SCREEN = {"width": 420, "height": 900}  # a phone
# the chapters that open with their result: every notebook page but the landing page
LEADING = [c for c in chapters.CHAPTERS if c.is_notebook and c.slug != "intro"]

_FIRST_SCREEN_PROBE = """
() => {
  const main = document.querySelector('main') || document.body;
  const box = (el) => { if (!el) return null; const r = el.getBoundingClientRect();
                         return {top: r.top + window.scrollY, bottom: r.bottom + window.scrollY, width: r.width}; };
  const counts = Array.from(main.querySelectorAll('p')).find(p => /runs test \\d+ of the paper.s \\d+ claims/.test(p.innerText));
  const outputs = Array.from(main.querySelectorAll('.cell_output'));
  const first = outputs.find(o => o.innerText.trim() || o.querySelector('img, table'));
  const kind = !first ? 'none' : first.querySelector('img') ? 'figure' : first.querySelector('table') ? 'table' : 'text';
  // the page's prose: paragraphs outside code cells, their outputs and folded sections
  const prose = Array.from(main.querySelectorAll('p')).filter(p => !p.closest('.cell, details, nav, table, figure'));
  const lead = prose[0];
  const img = main.querySelector('.cell_output img');
  return {counts: box(counts), first: kind, firstOutput: box(first),
          figure: img && {...box(img), natural: img.naturalWidth, column: img.closest('.cell_output').clientWidth},
          lead: lead && {...box(lead), glued: Array.from(lead.querySelectorAll('.pasted-text')).map(s => s.innerText).join(' '),
                         proseBeforeOutput: prose.filter(p => first && box(p).bottom <= box(first).top).length},
          text: main.innerText,
          boolCells: Array.from(main.querySelectorAll('td')).map(td => td.innerText.trim())
                       .filter(t => t === 'True' || t === 'False').length};
}
"""


@pytest.fixture(scope="module")
def cpu_build(tmp_path_factory, session_settings) -> tuple[Path, Path]:
    """The ``cpu`` book rendered from the recorded runs (``make book FROM=reference``), once per module: its
    HTML folder and its results root."""
    from medibio.book import build
    from medibio.results.recorded import REFERENCE_ROOT

    if not Path(testing.CHROMIUM).exists():
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    base = tmp_path_factory.mktemp("cpu-book")
    settings = session_settings.replace(results_root=base / "results", recorded=REFERENCE_ROOT)
    report = build.build_book("cpu", settings, root=build.book_root(base), keep_going=True)
    assert report.html_dir, "the cpu book did not render"
    return Path(report.html_dir), settings.results_root


@pytest.fixture(scope="module")
def cpu_book(cpu_build) -> Path:
    return cpu_build[0]


def test_the_cpu_book_from_reference_shows_its_pinned_values_and_tables(cpu_build) -> None:
    """A restructuring leaves the book unchanged: every value each chapter recorded and every table it shows
    (its CSV download) equal what was pinned on ``reference/`` (:func:`tests.support.book.book_snapshot`,
    pinned again on purpose with ``python -m tests.support.book pin <results root of a cpu build from
    reference>``). What depends on the machine (Appendix B's environment, this CPU's precision notes) is left out."""
    pinned = json.loads(testing.PINNED_BOOK.read_text(encoding="utf-8"))
    found = testing.book_snapshot(cpu_build[1])
    assert sorted(found) == sorted(pinned)
    for chapter, shown in pinned.items():
        assert found[chapter]["values"] == shown["values"], chapter
        moved = sorted(name for name in shown["tables"].keys() | found[chapter]["tables"].keys()
                       if found[chapter]["tables"].get(name) != shown["tables"].get(name))
        assert not moved, (chapter, moved)


def probe_pages(html_dir: Path, paths: list[str], viewport: dict[str, int], script: str) -> dict[str, object]:
    """``script`` evaluated on each page (``paths`` relative to the HTML root) at ``viewport``, by path."""
    from playwright.sync_api import sync_playwright

    seen = {}
    with testing.serve(html_dir) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=testing.CHROMIUM, args=list(testing.CHROMIUM_ARGS))
        try:
            for path in paths:
                page = browser.new_page(viewport=viewport)
                page.goto(f"{base}/{path}", wait_until="networkidle")
                seen[path] = page.evaluate(script)
                page.close()
        finally:
            browser.close()
    return seen


def open_pages(html_dir: Path, slugs: list[str], viewport: dict[str, int] = FIRST_SCREEN) -> dict[str, dict]:
    """What the browser sees of each chapter page at ``viewport`` (see :data:`_FIRST_SCREEN_PROBE`)."""
    seen = probe_pages(html_dir, [f"book/{slug}.html" for slug in slugs], viewport, _FIRST_SCREEN_PROBE)
    return {slug: seen[f"book/{slug}.html"] for slug in slugs}


@pytest.fixture(scope="module")
def cpu_pages(cpu_book) -> dict[str, dict]:
    return open_pages(cpu_book, [c.slug for c in chapters.CHAPTERS])


def test_what_holds_up_shows_its_verdict_counts_and_forest_plot_on_the_first_screen(cpu_pages) -> None:
    page = cpu_pages["what_holds_up"]
    assert page["counts"] and page["counts"]["bottom"] <= FIRST_SCREEN["height"], page["counts"]
    assert page["figure"] and page["figure"]["bottom"] <= FIRST_SCREEN["height"], page["figure"]
    assert page["counts"]["top"] < page["figure"]["top"]


@pytest.mark.parametrize("chapter", [c for c in chapters.CHAPTERS if c.is_notebook], ids=lambda c: c.slug)
def test_each_chapter_opens_with_a_table_or_a_figure(cpu_pages, chapter) -> None:
    assert cpu_pages[chapter.slug]["first"] in ("table", "figure"), chapter.slug


@pytest.mark.parametrize("chapter", LEADING, ids=lambda c: c.slug)
def test_each_chapter_reads_its_result_in_a_sentence_before_the_how(cpu_pages, chapter) -> None:
    """The page's first paragraph is the reading of its result, with numbers glued from what the chapter
    computed (never typed), and the result itself comes right under it, on the first screen: the prose that
    says how it was obtained follows the result."""
    page = cpu_pages[chapter.slug]
    lead = page["lead"]
    assert lead and re.search(r"\d", lead["glued"]), f"{chapter.slug}: the first paragraph reads no computed number"
    assert lead["proseBeforeOutput"] <= 2, f"{chapter.slug}: {lead['proseBeforeOutput']} paragraphs before the result"
    assert lead["bottom"] <= page["firstOutput"]["top"] < FIRST_SCREEN["height"], (lead, page["firstOutput"])


@pytest.fixture(scope="module")
def claims_on_a_phone(cpu_book) -> dict:
    return open_pages(cpu_book, ["what_holds_up"], NARROW_SCREEN)["what_holds_up"]


def test_the_forest_plot_reads_on_a_phone(claims_on_a_phone) -> None:
    """At 420 px the page shows the forest plot's narrow variant across the column at about the size it was
    drawn (9.5 pt labels at ~14 px), not the desktop figure shrunk to a third, whose labels are ~4 px tall."""
    figure = claims_on_a_phone["figure"]
    assert figure["width"] >= 0.9 * figure["column"], figure
    assert figure["width"] >= 0.8 * figure["natural"], figure


def test_no_page_shows_warnings_machine_paths_or_python_booleans(cpu_pages) -> None:
    for slug, page in cpu_pages.items():
        assert not BUILDER_TEXT.findall(page["text"]), (slug, BUILDER_TEXT.findall(page["text"])[:5])
        assert page["boolCells"] == 0, slug


def broken_links(html_dir: Path) -> list[tuple[str, str]]:
    """Every link of the built book to a file of the book, or to an anchor in one, that is not there: (page,
    href). External links are left alone (the book has none to check offline)."""
    from urllib.parse import unquote, urlparse

    from bs4 import BeautifulSoup

    soups = {p.resolve(): BeautifulSoup(p.read_text(encoding="utf-8"), "html.parser") for p in html_dir.rglob("*.html")}
    ids = {p: {el["id"] for el in s.find_all(id=True)} for p, s in soups.items()}
    broken = []
    for page, soup in soups.items():
        for a in soup.find_all("a", href=True):
            parsed = urlparse(a["href"])
            if parsed.scheme or a["href"].startswith(("mailto:", "javascript:")):
                continue
            target = (page.parent / unquote(parsed.path)).resolve() if parsed.path else page
            if target.is_dir():
                target = target / "index.html"
            if not target.exists() or (parsed.fragment and target in ids and unquote(parsed.fragment) not in ids[target]):
                broken.append((str(page.relative_to(html_dir.resolve())), a["href"]))
    return broken


def test_every_internal_link_resolves(cpu_book) -> None:
    broken = broken_links(cpu_book)
    assert not broken, broken[:20]


def test_no_html_page_is_over_a_megabyte(cpu_book) -> None:
    heavy = [(str(p.relative_to(cpu_book)), p.stat().st_size) for p in cpu_book.rglob("*.html")
             if p.stat().st_size > MAX_PAGE_BYTES]
    assert not heavy, heavy


def test_every_figure_says_what_it_shows_in_its_alt_text(cpu_book) -> None:
    """A figure's alt text is what it shows (its title, or the chapter's words), never the hashed file name
    Sphinx gives an image without one (medibio.book.alt_text)."""
    from bs4 import BeautifulSoup

    found, unsaid = 0, []
    for page in (cpu_book / "book").glob("*.html"):
        for img in BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser").select("main img"):
            found += 1
            alt = img.get("alt", "")
            if len(alt) < 12 or alt.endswith(".png") or "/" in alt.split()[0]:
                unsaid.append((page.name, alt[:80]))
    assert found >= 10 and not unsaid, (found, unsaid)


def test_run_pages_fit_a_phone_their_wide_tables_scroll_inside_themselves(cpu_book) -> None:
    """At 420 px a run page is as wide as the screen: its per-seed table (eleven columns) scrolls on its own
    rather than widening the page (it was 837 px wide), and its curve is no wider than the screen."""
    runs = cpu_book / "runs"
    pages = [runs / "index.html", *sorted((runs / "finetune" / "cpu-study").rglob("index.html"))[:2],
             *sorted((runs / "finetune" / "cpu-ift").rglob("index.html"))[:1]]
    widths = probe_pages(cpu_book, [p.relative_to(cpu_book).as_posix() for p in pages], NARROW_SCREEN,
                         "document.documentElement.scrollWidth")
    assert len(widths) == 4 and all(w <= NARROW_SCREEN["width"] for w in widths.values()), widths


def test_the_runs_behind_every_tested_verdict_have_pages(cpu_book) -> None:
    runs = cpu_book / "runs"
    for profile in ("cpu", "cpu-ift", "cpu-study"):
        assert list((runs / "finetune" / profile).rglob("index.html")), profile


MACHINE_PATH = re.compile(r"/tmp/|/home/|/root/|/work/")


def test_every_run_page_lists_its_predictions_and_names_no_folder_of_the_build(cpu_book) -> None:
    """Every recorded run's page lists its test predictions (a cross-validation fold's come from the pooled
    splits), and no page's text names a folder of the machine that built it."""
    from bs4 import BeautifulSoup

    unlisted, machine = [], []
    for page in (cpu_book / "runs").rglob("*.html"):
        soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
        name = str(page.relative_to(cpu_book))
        if soup.find(class_="problem"):
            unlisted.append(name)
        for script in soup.find_all(["script", "style"]):
            script.decompose()
        machine += [(name, hit) for hit in MACHINE_PATH.findall(soup.get_text())]
    assert not unlisted, unlisted[:10]
    assert not machine, machine[:10]
