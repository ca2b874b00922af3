"""Glue the chapter notebooks share: parameters, paper-vs-ours tables, figures, summaries.

Notebooks hold no logic beyond calling the library; what every chapter needs to show its results the
same way lives here. :func:`setup` validates a chapter's parameters in its first cell and fills every value
left at ``None`` from the profile (:mod:`medibio.profiles`), so a chapter run by papermill, in JupyterLab or by
``medibio book`` with the same profile runs the same thing. Each chapter also writes a small
``summary.json`` (tables and their rows, figures, key numbers, which paper artefacts it reproduced from
which records) under ``<results_root>/book/<profile>/<chapter>/``: the tests read it, the first page builds
its index from it, and the appendix lists it.
"""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pandas as pd

from medibio.atomic import write_json, write_text
from medibio.paths import DATA_ENV, RESULTS_ENV, data_root, results_root

SUMMARY_FILE = "summary.json"
# Library chatter that has no place in a rendered chapter (set before transformers/datasets are imported).
QUIET_ENV = {"TQDM_DISABLE": "1", "TOKENIZERS_PARALLELISM": "false",
             "HF_HUB_DISABLE_PROGRESS_BARS": "1", "HF_DATASETS_DISABLE_PROGRESS_BARS": "1",
             "TRANSFORMERS_VERBOSITY": "error", "DATASETS_VERBOSITY": "error", "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1"}


@dataclass
class ChapterContext:
    """Execution context of one chapter: resolved parameters and locations, and what it has shown so far."""

    name: str
    profile: str
    data_root: Path | None
    results_root: Path
    params: SimpleNamespace = field(default_factory=SimpleNamespace)
    tables: dict[str, dict[str, Any]] = field(default_factory=dict)
    figures: dict[str, str] = field(default_factory=dict)
    values: dict[str, Any] = field(default_factory=dict)
    pending: list[str] = field(default_factory=list)
    reproductions: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def out_dir(self) -> Path:
        return self.results_root / "book" / self.profile / self.name

    @property
    def has_data(self) -> bool:
        return self.data_root is not None and self.data_root.is_dir()

    def table(self, key: str, frame: pd.DataFrame, caption: str = "", paper_vs_ours: bool = False,
              precision: int = 2) -> Any:
        """Record ``frame`` under ``key`` and show it (paper/ours/diff coloured).

        In a notebook the table is displayed right away, so every table of a cell reaches the page (a returned
        value shows only when it is the cell's last expression); outside IPython the Styler is returned."""
        self.tables[key] = {"rows": [str(i) for i in frame.index], "columns": [str(c) for c in frame.columns],
                            "n_rows": int(len(frame)), "caption": caption}
        self.save()
        styler = style(frame, caption=caption, diff_columns=_diff_columns(frame) if paper_vs_ours else (),
                       precision=precision)
        try:
            from IPython import get_ipython
        except ImportError:
            return styler
        if get_ipython() is None:
            return styler
        from IPython.display import display

        display(styler)
        return None

    def figure(self, key: str, fig: Any) -> Any:
        """Save ``fig`` as PNG under the chapter's output folder, record it, and return it for display."""
        path = self.out_dir / "figures" / f"{key}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=110, bbox_inches="tight")
        self.figures[key] = str(path)
        self.save()
        return fig

    def reproduces(self, artefact: str, records: Iterable[Any] = (), section: str = "",
                   status: str | None = None) -> None:
        """Note that this chapter shows our own numbers for a figure/table of the paper, from ``records``
        (run records: ``status``, and ``recorded`` for reference results committed from a GPU run) or, for
        what is computed without runs (the field analysis), an explicit ``status``; the first page's index
        is built from these notes."""
        recs = list(records)
        ok = [r for r in recs if getattr(r, "status", "ok") == "ok"]
        recorded = [r for r in ok if getattr(r, "recorded", False)]
        if status is None:
            parts = []
            if len(recorded) < len(ok):
                parts.append(f"reproduced on this profile ({len(ok) - len(recorded)} runs)")
            if recorded:
                parts.append(f"recorded GPU result ({len(recorded)} runs)")
            status = "; ".join(parts) or "paper numbers only"
        from medibio import profiles

        if profiles.limit() and status != "paper numbers only":
            status += f" — limited to {profiles.limit()} examples per split: a code-path check, not a result"
        self.reproductions[artefact] = {"status": status, "section": section, "runs": len(ok)}
        self.save()

    def value(self, key: str, value: Any) -> Any:
        """Record a key number (a score, a count) the tests or the appendix read back."""
        self.values[key] = value
        self.save()
        return value

    def awaiting(self, api: str) -> None:
        """Note that a cell waits for a library API that is not there yet (shown in the appendix)."""
        if api not in self.pending:
            self.pending.append(api)
        self.save()

    def api(self, module: str, name: str) -> Any:
        """``module.name`` when the library provides it, else None (recorded as awaited).

        Lets a chapter show the paper's numbers today and its own results once the library part that
        produces them lands, without a cell that fails in between.
        """
        import importlib

        try:
            return getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            self.awaiting(f"{module}.{name}")
            return None

    @contextlib.contextmanager
    def quiet(self, name: str = "training") -> Iterator[None]:
        """Long work with its progress where the reader is, and without library chatter on the page.

        Progress bars and run lines go to the terminal that started the kernel (``medibio book``,
        ``papermill``; see :mod:`medibio.progress`) and, live, into this cell, which keeps one summary line
        ("19 runs — 13 trained now (34:10), 6 reused from their records"). Whatever else the libraries print
        on stderr is kept in ``<out_dir>/<name>.stderr.log`` rather than on the page.
        """
        from medibio import progress

        status = progress.CellStatus(name)
        buffer = io.StringIO()
        try:
            with contextlib.redirect_stderr(buffer), progress.sink(status):
                yield
        finally:
            status.finish()
            write_text(self.out_dir / f"{name}.stderr.log", buffer.getvalue())

    def figure_file(self, key: str, path: str | Path) -> Any:
        """Record a PNG a library function already wrote, and return it for display."""
        from IPython.display import Image

        self.figures[key] = str(path)
        self.save()
        return Image(filename=str(path))

    def save(self) -> Path:
        payload = {"chapter": self.name, "profile": self.profile,
                   "data_root": str(self.data_root) if self.data_root else None,
                   "results_root": str(self.results_root), "tables": self.tables, "figures": self.figures,
                   "values": self.values, "pending": self.pending, "reproductions": self.reproductions,
                   "updated": datetime.now(timezone.utc).isoformat(timespec="seconds")}
        return write_json(self.out_dir / SUMMARY_FILE, payload)


def setup(name: str, profile: str, data_root_param: str | Path | None = "",
          results_root_param: str | Path | None = "", **params: Any) -> ChapterContext:
    """Check a notebook's parameters, export ``MEDIBIO_*`` for the library, set plotting defaults.

    ``params`` are the chapter's own parameters (``tasks``, ``seeds``, ...): validated, and ``None`` taken
    from the profile (:func:`medibio.book.parameters.resolve`); the result is ``chapter.params``. Empty
    paths mean "the library's default" (``$MEDIBIO_DATA`` or ``../shared/data``; ``results/``), so a notebook
    opened in JupyterLab runs with its defaults, and papermill can point it elsewhere.
    """
    import matplotlib
    import seaborn as sns

    from medibio import progress
    from medibio.book.parameters import resolve

    resolved = resolve(profile, **params)
    progress.terminal()  # pin the launcher's terminal before any cell redirects stderr
    if data_root_param:
        os.environ[DATA_ENV] = str(Path(data_root_param).expanduser().resolve())
    if results_root_param:
        os.environ[RESULTS_ENV] = str(Path(results_root_param).expanduser().resolve())
    for key, value in QUIET_ENV.items():
        os.environ.setdefault(key, value)
    root = data_root(must_exist=False)
    matplotlib.rcParams.update({"figure.dpi": 100, "savefig.dpi": 110})
    sns.set_theme(style="whitegrid", context="notebook")
    pd.set_option("display.precision", 2)
    chapter = ChapterContext(name=name, profile=resolved.profile, data_root=root if root.is_dir() else None,
                             results_root=Path(results_root()).resolve(), params=resolved)
    from medibio import profiles

    if profiles.limit():
        from IPython.display import Markdown, display

        chapter.values["limit"] = profiles.limit()
        display(Markdown(f"**Limited build:** every run of this chapter used at most {profiles.limit()} examples "
                         f"per split (`--limit`, `${profiles.LIMIT_ENV}`): the `{resolved.profile}` profile's code "
                         "path end to end, not its results."))
    chapter.save()
    return chapter


def _diff_columns(frame: pd.DataFrame) -> tuple[str, ...]:
    return tuple(str(c) for c in frame.columns
                 if (str(c).lower().startswith(("diff", "Δ", "delta", "gain")) or str(c).endswith("_diff"))
                 and pd.api.types.is_numeric_dtype(frame[c]))


def style(frame: pd.DataFrame, caption: str = "", diff_columns: Iterable[str] = (), precision: int = 2) -> Any:
    """A pandas Styler as the paper prints numbers: counts as integers with thousands separators (Table 5's
    90,000 steps, not 90000.00), scores with fixed precision, "–" for missing values, coloured differences;
    the table scrolls sideways inside the page when it is wider than the page."""
    numeric = [c for c in frame.columns if pd.api.types.is_numeric_dtype(frame[c])
               and not pd.api.types.is_bool_dtype(frame[c])]
    whole = [c for c in numeric if _whole_numbers(frame[c])]
    scores = [c for c in numeric if c not in whole]
    styler = frame.style.format(precision=precision, na_rep="–", subset=scores or None) if scores else frame.style
    if whole:
        styler = styler.format("{:,.0f}", na_rep="–", subset=whole)
    styler = styler.set_table_attributes('style="display: block; overflow-x: auto; max-width: 100%;"')
    styler = styler.set_table_styles([{"selector": "th, td", "props": "padding: 0.2em 0.7em;"}], overwrite=False)
    diffs = [c for c in frame.columns if str(c) in set(diff_columns)]
    if diffs:
        styler = styler.map(_diff_colour, subset=diffs)
    if caption:
        styler = styler.set_caption(caption)
    return styler


def _whole_numbers(column: pd.Series) -> bool:
    """Counts (steps, examples, seeds): every present value is an integer of magnitude 100 or more, or the
    column has an integer type. Scores such as 78.00 keep their decimals."""
    values = column.dropna().astype(float)
    if pd.api.types.is_integer_dtype(column):
        return True
    return bool(len(values)) and bool((values == values.round()).all()) and bool((values.abs() >= 100).any())


def _diff_colour(value: Any) -> str:
    if value is None or pd.isna(value):
        return ""
    if abs(float(value)) < 0.005:
        return "color: #555"
    return "color: #1a7f37" if float(value) > 0 else "color: #b42318"


def paper_vs_ours(paper: Mapping[str, float | None], ours: Mapping[str, float | None], *,
                  index_name: str = "dataset", order: Sequence[str] | None = None,
                  spread: Mapping[str, float | None] | None = None) -> pd.DataFrame:
    """One row per key: the paper's number, ours, ``ours - paper`` and (optionally) our seed spread."""
    keys = list(order) if order is not None else list(dict.fromkeys([*paper, *ours]))
    rows = []
    for key in keys:
        p, o = paper.get(key), ours.get(key)
        row = {"paper": p, "ours": o,
               "diff (ours − paper)": (o - p) if p is not None and o is not None else None}
        if spread is not None:
            row["ours ± (sd over seeds)"] = spread.get(key)
        rows.append(row)
    frame = pd.DataFrame(rows, index=pd.Index(keys, name=index_name))
    return frame.astype("float64")


def reproduction_index(results_root_dir: str | Path, profile: str) -> pd.DataFrame:
    """Every figure and table of the paper -> the chapter reproducing it and what that chapter showed on this
    profile, read from the chapters' summaries (written from the run records each chapter used)."""
    from medibio.book.chapters import ARTEFACTS, chapter_of

    rows = []
    for artefact in ARTEFACTS:
        entry = chapter_of(artefact)
        status, section = "paper numbers only", ""
        if entry is not None:
            try:
                shown = read_summary(results_root_dir, profile, entry.slug).get("reproductions", {})
            except FileNotFoundError:
                shown = {}
            if artefact in shown:
                status, section = shown[artefact]["status"], shown[artefact].get("section", "")
        rows.append({"paper": artefact, "chapter": entry.title if entry else "–", "section": section or "–",
                     "status": status})
    return pd.DataFrame(rows).set_index("paper")


def read_summary(results_root_dir: str | Path, profile: str, chapter: str) -> dict[str, Any]:
    """The summary a chapter wrote (tests and the appendix use it)."""
    import json

    path = Path(results_root_dir) / "book" / profile / chapter / SUMMARY_FILE
    return json.loads(path.read_text(encoding="utf-8"))
