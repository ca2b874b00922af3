"""Every table of a chapter as CSV and JSON with links under it, links from table cells to pages of the built
book, and the glued numbers of the prose (medibio.book.notebook)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import numpy as np
import pandas as pd
import pytest

from medibio.book import assets, build, notebook
from medibio.core.settings import Settings


def _chapter(tmp_path: Path, page_dir: Path | None = None) -> notebook.ChapterContext:
    settings = Settings.from_env(results_root=tmp_path / "results", progress=False)
    return notebook.ChapterContext(name="99_test", profile="smoke", settings=settings,
                                   page_dir=page_dir or tmp_path / "book")


def _frame() -> pd.DataFrame:
    index = pd.MultiIndex.from_tuples([("MiniLM", "GAD"), ("MiniLM", "HoC")], names=["model", "row"])
    return pd.DataFrame({"mean": [81.234, np.nan], "steps": [90_000, 120], "digest": ["abc123", None]}, index=index)


def test_every_table_is_written_as_csv_and_json_with_plain_values(tmp_path) -> None:
    chapter = _chapter(tmp_path)
    chapter.table("scores", _frame(), caption="Scores", links={("MiniLM / GAD", "mean"): "runs/a/index.html"})
    entry = notebook.read_summary(tmp_path / "results", "smoke", "99_test")["tables"]["scores"]
    folder = tmp_path / "results" / "book" / "smoke" / "99_test" / notebook.TABLES_DIR
    assert entry["files"] == {"csv": str(folder / "scores.csv"), "json": str(folder / "scores.json")}
    csv = pd.read_csv(folder / "scores.csv", index_col=[0, 1])
    assert csv.loc[("MiniLM", "GAD"), "mean"] == pytest.approx(81.234)  # full precision, not the shown 81.23
    assert pd.isna(csv.loc[("MiniLM", "HoC"), "mean"]) and csv["steps"].tolist() == [90_000, 120]
    raw = json.loads((folder / "scores.json").read_text(encoding="utf-8"))
    assert raw["columns"] == ["mean", "steps", "digest"] and raw["index"] == [["MiniLM", "GAD"], ["MiniLM", "HoC"]]
    assert raw["data"][0] == [81.234, 90_000, "abc123"] and raw["data"][1][0] is None
    for path in folder.iterdir():
        assert "<a " not in path.read_text(encoding="utf-8") and "index.html" not in path.read_text(encoding="utf-8")


def test_a_rewritten_table_replaces_its_files(tmp_path) -> None:
    chapter = _chapter(tmp_path)
    chapter.table("t", pd.DataFrame({"x": [1.0]}))
    chapter.table("t", pd.DataFrame({"x": [2.0, 3.0]}))
    folder = chapter.out_dir / notebook.TABLES_DIR
    assert sorted(p.name for p in folder.iterdir()) == ["t.csv", "t.json"]  # no temporary files left
    assert pd.read_csv(folder / "t.csv", index_col=0)["x"].tolist() == [2.0, 3.0]


def test_download_links_are_relative_to_the_page(tmp_path) -> None:
    chapter = _chapter(tmp_path, page_dir=tmp_path / "root" / "book")
    files = notebook.write_table(pd.DataFrame({"x": [1]}), chapter.out_dir / notebook.TABLES_DIR, "t")
    line = notebook.downloads(files, chapter.page_dir)
    assert line == ("Download this table: [CSV](<../../results/book/smoke/99_test/tables/t.csv>) · "
                    "[JSON](<../../results/book/smoke/99_test/tables/t.json>)")


def test_linked_cells_keep_their_formatted_text(tmp_path) -> None:
    links = {("MiniLM / GAD", "mean"): "runs/finetune/cpu/minilm/direct/GAD/0123abcd/index.html",
             ("MiniLM / HoC", "steps"): "runs/b c/index.html"}
    html = _chapter(tmp_path).table("scores", _frame(), links=links).to_html()
    cells = dict(re.findall(r'<td id="T_\w+_(row\d_col\d)" class="[^"]*" >(.*?)</td>', html))
    assert cells["row0_col0"] == '<a href="../runs/finetune/cpu/minilm/direct/GAD/0123abcd/index.html">81.23</a>'
    assert cells["row1_col1"] == '<a href="../runs/b%20c/index.html">120</a>'  # a count stays a count
    assert cells["row0_col1"] == "90,000" and cells["row1_col0"] == "–"
    assert "row1_col2" not in cells and "abc123" not in html  # provenance stays in the files, off the page
    assert html.count("<a ") == 2


def test_a_link_to_a_cell_the_table_lacks_names_the_labels(tmp_path) -> None:
    with pytest.raises(ValueError, match=r"\('GAD', 'mean'\): no such row; rows: \['MiniLM / GAD', 'MiniLM / HoC'\]"):
        _chapter(tmp_path).table("scores", _frame(), links={("GAD", "mean"): "runs/x/index.html"})
    with pytest.raises(ValueError, match="no such column"):
        _chapter(tmp_path).table("scores", _frame(), links={("MiniLM / GAD", "F1"): "runs/x/index.html"})


def test_glue_records_the_value_and_the_text_shown(tmp_path) -> None:
    chapter = _chapter(tmp_path)
    assert chapter.glue("gain", 1.2345, "{:+.2f}") == "+1.23"
    assert chapter.glue("gain_p", float("nan"), "{:.3f}") == notebook.NOT_AVAILABLE
    assert chapter.glue("best", None) == notebook.NOT_AVAILABLE
    assert chapter.glue("runs", 3) == "3"
    summary = notebook.read_summary(tmp_path / "results", "smoke", "99_test")
    assert summary["values"] == {"gain": 1.2345, "gain_p": None, "best": None, "runs": 3}
    assert summary["glued"] == {"gain": "+1.23", "gain_p": "–", "best": "–", "runs": "3"}


# --- the same, rendered by jupyter-book with the book's own configuration ------------------------------------

_CODE = """\
import pandas as pd
from medibio.book import notebook as nb

chapter = nb.setup("99_test", "smoke", "", {results!r})
frame = pd.DataFrame({{"mean": [81.234, 70.0]}}, index=["GAD", "HoC"])
chapter.table("scores", frame, caption="Scores", links={{("GAD", "mean"): "runs/gad/index.html"}})
chapter.glue("gain", 1.2345, "{{:+.2f}}")
chapter.glue("interval", (0.5, 2.25), "{{0[0]:.2f}} to {{0[1]:.2f}}")
"""


def _tiny_book(root: Path, prose: str) -> Path:
    """A one-page book with the repository's configuration whose page is executed like a chapter."""
    import papermill

    build.book_root(root)
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/page\n", encoding="utf-8")
    (root / "book").mkdir(exist_ok=True)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# A page"),
                nbformat.v4.new_code_cell(_CODE.format(results=str(root / "results"))),
                nbformat.v4.new_markdown_cell(prose)]
    nb.metadata["kernelspec"] = {"name": assets.KERNEL_NAME, "display_name": "Python (medibio)", "language": "python"}
    source = root / "page.source.ipynb"
    nbformat.write(nb, str(source))
    if not assets.kernel_ready():
        assets.install_kernel()
    papermill.execute_notebook(str(source), str(root / "book" / "page.ipynb"), kernel_name=assets.KERNEL_NAME,
                               cwd=str(root / "book"), progress_bar=False,
                               kernel_manager_class=build.socket_kernels())
    return build.build_html(root)


@pytest.mark.slow
def test_the_built_page_has_downloads_linked_cells_and_glued_numbers(tmp_path) -> None:
    html_dir = _tiny_book(tmp_path, "The gain is {glue:text}`gain` points (95% CI {glue:text}`interval`).")
    page = (html_dir / "book" / "page.html").read_text(encoding="utf-8")
    assert 'The gain is <span class="pasted-text">+1.23</span> points (95% CI <span class="pasted-text">0.50 to ' \
           '2.25</span>)' in page
    assert '<a href="../runs/gad/index.html">81.23</a>' in page
    hrefs = dict(re.findall(r'<a class="reference download internal" download="" href="([^"]+)">'
                            r'<span class="xref download myst">(CSV|JSON)</span>', page))
    assert sorted(hrefs.values()) == ["CSV", "JSON"]
    tables = tmp_path / "results" / "book" / "smoke" / "99_test" / notebook.TABLES_DIR
    for href, kind in hrefs.items():
        assert href.startswith("../_downloads/")
        copied = (html_dir / "book" / href).resolve()
        assert copied.read_bytes() == (tables / f"scores.{kind.lower()}").read_bytes()
    # a table file gone by the time the HTML is built fails it, rather than leaving a dead link
    (tables / "scores.csv").unlink()
    with pytest.raises(build.BookBuildError, match="cross-reference target not found: .*scores.csv"):
        build.build_html(tmp_path)


@pytest.mark.slow
def test_a_glue_key_no_cell_defines_fails_the_build(tmp_path) -> None:
    with pytest.raises(build.BookBuildError, match="No key 'p_value' found in glue data"):
        _tiny_book(tmp_path, "The gain is {glue:text}`gain` (p = {glue:text}`p_value`).")
