"""The rendered smoke book, opened in headless Chromium: titles, tables, images, offline MathJax.

The book is served from localhost; any request to another host fails the test (MathJax and every other
asset must come from the book itself). Screenshots of every page go to the session's temporary folder.
"""

from __future__ import annotations

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
    else:
        assert page.tables >= 2  # the intro's chapter map and profile table
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
