"""An executed chapter made to read like a paper's section, between papermill and jupyter-book.

Done here, on every executed notebook, rather than by hand in each source notebook (where a new chapter would
forget it):

* **one parameters cell**: papermill adds the values it injected as a cell of their own after the notebook's
  ``parameters`` cell, so a page showed two; the injected values replace the defaults in the notebook's cell
  (which keeps its comments saying what each parameter means) and papermill's cell goes;
* **code collapsed**: every code cell but the parameters cell gets jupyter-book's ``hide-input`` tag (its
  source one click away, its output in place); a cell tagged ``show-input`` in the source keeps its code in
  view, where the code is the point; a cell that shows nothing (set-up, a glued number) gets ``remove-input``,
  so a page holds no row of empty toggles between its reading and its table (the notebook download keeps all
  code);
* **no stray outputs**: a cell that ends by recording a number (``chapter.glue(...)``, ``chapter.value(...)``)
  would print the returned value under it; such a result is dropped, and so are the live progress lines of
  long work (``[finetune] 19 runs — ...``, :class:`medibio.core.progress.CellStatus`) and whatever a cell wrote
  on stderr (library warnings name files of the building machine): they are for whoever builds the book, and
  stay in the terminal and the chapter's logs;
* **the result first**: the parameters cell keeps its ``parameters`` tag (papermill needs it) and is folded
  away (``hide-cell``), so a page opens with its title, its reading and its key table or figure.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PARAMETERS, INJECTED = "parameters", "injected-parameters"
HIDE, SHOW, FOLD, REMOVE = "hide-input", "show-input", "hide-cell", "remove-input"
GLUE_MIME = "application/papermill.record/"  # how a glued value is kept in a cell's outputs, unseen
# the text of a progress line that a CellStatus displays in a cell while it runs: "[finetune] 19 runs — ..."
PROGRESS_LINE = re.compile(r"^\[[\w .-]+\] ")
# calls that record a value for the prose or the appendix; what they return is not meant for the page
RECORDING_CALLS = frozenset({"glue", "glue_all", "value"})


def _tags(cell) -> list[str]:
    return cell.setdefault("metadata", {}).setdefault("tags", [])


def merge_parameters(parameters: str, injected: str) -> str:
    """``parameters`` (the notebook's cell) with each name that ``injected`` (papermill's cell) assigns set to
    the injected value, the comment of its line kept; names the notebook does not declare are appended."""
    values = {node.targets[0].id: ast.get_source_segment(injected, node.value)
              for node in ast.parse(injected).body
              if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)}
    lines = parameters.splitlines()
    seen = set()
    for node in sorted(ast.parse(parameters).body, key=lambda n: n.lineno, reverse=True):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        name = node.targets[0].id
        if name not in values:
            continue
        seen.add(name)
        last = lines[node.end_lineno - 1]
        comment = last[node.end_col_offset:].rstrip() if node.lineno == node.end_lineno else ""
        comment = comment if comment.lstrip().startswith("#") else ""
        lines[node.lineno - 1:node.end_lineno] = [f"{name} = {values[name]}{comment}"]
    lines += [f"{name} = {value}  # set by the build" for name, value in values.items() if name not in seen]
    return "\n".join(lines)


def _records_only(source: str) -> bool:
    """Whether a cell's last statement is a bare call of a recording method (:data:`RECORDING_CALLS`)."""
    try:
        body = ast.parse(source).body
    except SyntaxError:  # IPython magics: leave the cell alone
        return False
    last = body[-1] if body else None
    return (isinstance(last, ast.Expr) and isinstance(last.value, ast.Call)
            and isinstance(last.value.func, ast.Attribute) and last.value.func.attr in RECORDING_CALLS)


def prepare(notebook) -> None:
    """Apply the module's three rules to an executed notebook (an ``nbformat`` node), in place."""
    cells = notebook.cells
    own = next((c for c in cells if PARAMETERS in _tags(c)), None)
    injected = next((c for c in cells if INJECTED in _tags(c)), None)
    if own is not None and injected is not None:
        own.source = merge_parameters(own.source, injected.source)
    if injected is not None and own is not None:
        cells.remove(injected)
    elif injected is not None:  # a notebook without a parameters cell: papermill's is the one to show
        _tags(injected).remove(INJECTED)
        _tags(injected).append(PARAMETERS)
    for cell in cells:
        if cell.cell_type != "code":
            continue
        cell.outputs = [o for o in cell.get("outputs", []) if not _for_the_builder(o)]
        if _records_only(cell.source):
            cell.outputs = [o for o in cell.outputs if o.get("output_type") != "execute_result"]
        tags = _tags(cell)
        if PARAMETERS in tags and FOLD not in tags:
            tags.append(FOLD)
        elif PARAMETERS not in tags and not {SHOW, HIDE, REMOVE} & set(tags):
            tags.append(HIDE if any(_seen(o) for o in cell.outputs) else REMOVE)


def _seen(output) -> bool:
    """Whether a cell output shows on the page (a glued value's record does not)."""
    data = output.get("data")
    return not (data and all(mime.startswith(GLUE_MIME) for mime in data))


def _for_the_builder(output) -> bool:
    """Whether a cell output is a progress line or stderr text (see the module's rules), not the page's."""
    if output.get("output_type") == "stream":
        return output.get("name") == "stderr"
    data = output.get("data", {})
    return (output.get("output_type") == "display_data" and set(data) == {"text/plain"}
            and bool(PROGRESS_LINE.match(str(data["text/plain"]))))


def prepare_file(path: str | Path) -> None:
    """:func:`prepare` an executed notebook file, rewritten atomically."""
    import nbformat

    from medibio.core.atomic import write_text

    notebook = nbformat.read(str(path), as_version=4)
    prepare(notebook)
    write_text(Path(path), nbformat.writes(notebook))
