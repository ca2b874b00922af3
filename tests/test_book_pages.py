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
    assert [c.metadata["tags"] for c in code] == [["parameters"], ["hide-input"], ["hide-input"], ["show-input"],
                                                 ["hide-input"]]
    assert 'profile = "smoke"' in code[0].source and len(code) == 5
    assert [o.output_type for o in code[1].outputs] == ["display_data"]  # the glue record stays, '13' goes
    assert [o.output_type for o in code[2].outputs] == ["execute_result"]  # a table is the page's content
    pages.prepare(notebook)  # preparing twice changes nothing
    assert [c.metadata["tags"] for c in notebook.cells if c.cell_type == "code"][0] == ["parameters"]


def test_a_notebook_without_its_own_parameters_cell_shows_papermills(tmp_path):
    notebook = new_notebook(cells=[new_code_cell(INJECTED, metadata={"tags": ["injected-parameters"]}),
                                   new_code_cell("print(profile)")])
    path = tmp_path / "chapter.ipynb"
    nbformat.write(notebook, str(path))
    pages.prepare_file(path)
    cells = nbformat.read(str(path), as_version=4).cells
    assert [c.metadata["tags"] for c in cells] == [["parameters"], ["hide-input"]]


def test_the_line_saying_how_a_page_was_built_outside_a_git_checkout(monkeypatch, tmp_path):
    from medibio.book import notebook
    from medibio.core import provenance
    from medibio.core.settings import Settings

    monkeypatch.setattr(provenance, "git_commit", lambda *args, **kwargs: None)
    line = notebook.built_by(Settings(results_root=tmp_path), "cpu")
    assert "outside a git checkout" in line and "not a gi" not in line
