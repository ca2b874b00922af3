"""An executed chapter prepared for the page (medibio.book.pages): one parameters cell, code collapsed, no
value printed under a cell that only records it."""

from __future__ import annotations

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from medibio.book import pages

OWN = '''# Parameters: papermill (-p name value) may change these.
profile = "cpu"  # run profile: smoke, cpu, gpu or paper
seeds = [
    1, 2,
]  # the seeds
data_root = ""  # empty: $MEDIBIO_DATA'''
INJECTED = '''# Parameters
profile = "smoke"
seeds = [7]
extra = {"a": 1}
'''


def _executed() -> nbformat.NotebookNode:
    glue = new_code_cell('chapter.glue("n", 13, "{:.0f}")', outputs=[
        new_output("execute_result", {"text/plain": "'13'"}, execution_count=3),
        new_output("display_data", {"application/papermill.record/text/plain": "'13'"})])
    table = new_code_cell("chapter.table('t', frame)", outputs=[new_output("execute_result", {"text/plain": "t"})])
    shown = new_code_cell("x = 1", metadata={"tags": ["show-input"]})
    return new_notebook(cells=[new_markdown_cell("# Title"), new_code_cell(OWN, metadata={"tags": ["parameters"]}),
                               new_code_cell(INJECTED, metadata={"tags": ["injected-parameters"]}),
                               glue, table, shown, new_code_cell("%matplotlib inline")])


def test_one_parameters_cell_shows_the_injected_values_with_the_notebooks_comments():
    merged = pages.merge_parameters(OWN, INJECTED)
    assert merged.splitlines() == [
        "# Parameters: papermill (-p name value) may change these.",
        'profile = "smoke"  # run profile: smoke, cpu, gpu or paper',
        "seeds = [7]",
        'data_root = ""  # empty: $MEDIBIO_DATA',
        'extra = {"a": 1}  # set by the build']


def test_prepare_collapses_code_and_drops_what_only_records_a_value():
    notebook = _executed()
    pages.prepare(notebook)
    code = [c for c in notebook.cells if c.cell_type == "code"]
    # the glue cell and the magic show nothing: no toggle for them; the table's code is one click away
    assert [c.metadata["tags"] for c in code] == [["parameters", "hide-cell"], ["remove-input"], ["hide-input"],
                                                 ["show-input"], ["remove-input"]]
    assert 'profile = "smoke"' in code[0].source and len(code) == 5
    assert [o.output_type for o in code[1].outputs] == ["display_data"]  # the glue record stays, '13' goes
    assert [o.output_type for o in code[2].outputs] == ["execute_result"]  # a table is the page's content
    pages.prepare(notebook)  # preparing twice changes nothing
    assert [c.metadata["tags"] for c in notebook.cells if c.cell_type == "code"][0] == ["parameters", "hide-cell"]


def test_a_notebook_without_its_own_parameters_cell_shows_papermills(tmp_path):
    notebook = new_notebook(cells=[new_code_cell(INJECTED, metadata={"tags": ["injected-parameters"]}),
                                   new_code_cell("print(profile)")])
    path = tmp_path / "chapter.ipynb"
    nbformat.write(notebook, str(path))
    pages.prepare_file(path)
    cells = nbformat.read(str(path), as_version=4).cells
    assert [c.metadata["tags"] for c in cells] == [["parameters", "hide-cell"], ["remove-input"]]


def test_the_line_saying_how_a_page_was_built_outside_a_git_checkout(monkeypatch, tmp_path):
    from medibio.book import notebook
    from medibio.core import provenance
    from medibio.core.settings import Settings

    monkeypatch.setattr(provenance, "git_commit", lambda *args, **kwargs: None)
    line = notebook.built_by(Settings(results_root=tmp_path), "cpu")
    assert "outside a git checkout" in line and "not a gi" not in line


def test_progress_lines_and_stderr_stay_off_the_page_and_the_table_stays():
    progress = new_output("display_data", {"text/plain": "[finetune] 19 runs — 0 trained now (0:00), 19 reused"})
    warning = new_output("stream", name="stderr", text="/home/me/x.py:3: UserWarning: constrained_layout not applied")
    said = new_output("stream", name="stdout", text="rows below the frozen baseline: none\n")
    table = new_output("display_data", {"text/html": "<table></table>", "text/plain": "<Styler>"})
    cell = new_code_cell("chapter.table('t', frame)", outputs=[progress, warning, said, table])
    notebook = new_notebook(cells=[new_markdown_cell("# Title"), cell])
    pages.prepare(notebook)
    assert [o.get("name") or o.output_type for o in notebook.cells[1].outputs] == ["stdout", "display_data"]
    assert "text/html" in notebook.cells[1].outputs[1].data


def _cells(html: str, columns: list[str]) -> dict[str, list[str]]:
    """The text of each body cell of a rendered table, by column."""
    from bs4 import BeautifulSoup

    rows = [[td.get_text() for td in tr.find_all("td")] for tr in BeautifulSoup(html, "html.parser").tbody.find_all("tr")]
    return {name: [row[i] for row in rows] for i, name in enumerate(columns)}


def test_cells_read_as_words_and_counts_as_integers():
    import pandas as pd

    from medibio.book import notebook

    frame = pd.DataFrame({"runs": [42.0, None], "mean": [78.0, 61.5], "below frozen": [True, False],
                          "flag": [True, None], "tasks": [["BIOSSES", "HoC"], []], "steps": [90000.0, 1.0]},
                         index=["a", "b"])
    html = notebook.style(frame).to_html()
    cells = _cells(html, list(frame.columns))
    assert list(cells["runs"]) == ["42", "–"]  # a count, not 42.00
    assert list(cells["mean"]) == ["78.00", "61.50"]  # a score keeps its decimals
    assert list(cells["below frozen"]) == ["yes", "no"] and list(cells["flag"]) == ["yes", "–"]
    assert list(cells["tasks"]) == ["BIOSSES, HoC", "–"]
    assert list(cells["steps"]) == ["90,000", "1"]
    assert "True" not in html and "False" not in html


def test_a_named_index_heads_its_column_without_a_header_row_of_its_own():
    import re

    import pandas as pd

    from medibio.book import notebook

    frame = pd.DataFrame({"paper": [1.0], "ours": [2.0]}, index=pd.Index(["science-base"], name="id"))
    head = notebook.style(frame).to_html().split("<thead>")[1].split("</thead>")[0]
    assert head.count("<tr>") == 1  # one header row: no lone "id" line above the table
    assert [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<th[^>]*>.*?</th>", head)] == ["id", "paper", "ours"]
    assert frame.index.name == "id" and frame.columns.name is None  # the caller's frame is left as it was
    # a two-level index: its labels, no row of level names; a default index: no row numbers
    pair = pd.DataFrame({"F1": [70.0, 40.0]}, index=pd.MultiIndex.from_tuples([("minilm", "NER"), ("minilm", "JRE")],
                                                                              names=["model", "task"]))
    head, body = notebook.style(pair).to_html().split("</thead>")
    assert head.count("<tr>") == 1 and ">model<" not in head and ">NER<" in body and ">JRE<" in body
    numbered = notebook.style(pd.DataFrame({"score": [1.5, 2.5]})).to_html()
    # an interval column is not broken over lines; a text column is
    shown = notebook.style(pd.DataFrame({"claim": ["a long claim"], "ours": ["-1.17 [-2.99, +0.66]"]})).to_html()
    assert shown.count("white-space: nowrap") == 1 and "col1" in shown.split("white-space: nowrap")[0].split("}")[-1]
    assert ">0<" not in numbered and ">1<" not in numbered and ">1.50<" in numbered
    # a value fixed precision would print as zero keeps its digits (Table 3's learning rates), zero stays 0.00
    rates = notebook.style(pd.DataFrame({"learning rate": [1e-4, 5e-5, 0.0, 0.01]})).to_html()
    assert all(f">{shown}<" in rates for shown in ("0.0001", "5e-05", "0.00", "0.01"))
    # p-values at the precision the prose gives them: 0.005 is no 0.01
    tested = notebook.style(pd.DataFrame({"gain": [1.234], "p": [0.0049]})).to_html()
    assert ">1.23<" in tested and ">0.005<" in tested
    # row labels left off the page where a table asks (the claims' ids: the claim's words head each row)
    unlabelled = notebook.style(frame, row_labels=False).to_html()
    assert ">science-base<" not in unlabelled and ">id<" not in unlabelled and ">2.00<" in unlabelled


def test_the_page_leaves_provenance_out_of_a_score_table_and_the_files_keep_it(tmp_path):
    import pandas as pd

    from medibio.book import notebook
    from medibio.core.settings import Settings

    chapter = notebook.ChapterContext("c", "cpu", Settings(results_root=tmp_path))
    frame = pd.DataFrame({"mean": [80.1], "paper #1_diff": [-1.2], "digest": ["ab12"], "commit": ["f00"]},
                         index=["BIOSSES"])
    html = chapter.table("t", frame, paper_vs_ours=True).to_html()
    assert "ab12" not in html and "f00" not in html and "ours − paper #1" in html and "_diff" not in html
    saved = pd.read_csv(chapter.tables["t"]["files"]["csv"], index_col=0)
    assert list(saved.columns) == ["mean", "paper #1_diff", "digest", "commit"]
    assert chapter.table("p", frame, provenance=True).to_html().count("ab12") == 1


def test_the_provenance_line_is_short_and_points_to_appendix_b(tmp_path):
    from medibio.book import notebook
    from medibio.core.settings import Settings
    from medibio.results.recorded import REFERENCE_ROOT

    line = notebook.provenance_line(Settings(results_root=tmp_path, recorded=REFERENCE_ROOT), "cpu")
    assert notebook.APPENDIX_B in line and "reference/" in line
    assert len(line) < 300 and line.count(",") <= 3  # not the recorded runs' commits one by one


def test_a_figure_with_a_narrow_variant_is_one_picture_that_switches_on_a_phone(tmp_path):
    import base64

    from medibio.book import notebook

    wide, narrow = tmp_path / "wide.png", tmp_path / "narrow.png"
    wide.write_bytes(b"wide-png")
    narrow.write_bytes(b"narrow-png")
    html = notebook.responsive_image(wide, narrow, 'a "forest" plot')
    assert html.startswith("<picture>") and html.count("<img ") == 1  # one image on the page, whichever is shown
    assert (f'<source media="(max-width: {notebook.NARROW_SCREEN_PX}px)" srcset="data:image/png;base64,'
            f'{base64.b64encode(b"narrow-png").decode()} 2x">') in html
    assert f'src="data:image/png;base64,{base64.b64encode(b"wide-png").decode()}"' in html
    assert 'alt="a &quot;forest&quot; plot"' in html
