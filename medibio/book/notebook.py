"""Glue the chapter notebooks share: parameters, paper-vs-ours tables, figures, summaries.

Notebooks hold no logic beyond calling the library; what every chapter needs to show its results the
same way lives here. :func:`setup` validates a chapter's parameters in its first cell and fills every value
left at ``None`` from the profile (:mod:`medibio.core.profiles`), so a chapter run by papermill, in JupyterLab or by
``medibio book`` with the same profile runs the same thing. Each chapter also writes a small
``summary.json`` (tables and their rows, figures, key numbers, which paper artefacts it reproduced from
which records) under ``<results_root>/book/<profile>/<chapter>/``: the tests read it, the first page builds
its index from it, and the appendix lists it.
"""

from __future__ import annotations

import json

import contextlib
import io
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pandas as pd

from medibio.core import progress, provenance
from medibio.core.atomic import write_json, write_text
from medibio.core.settings import Settings
from medibio.book.parameters import resolve
from medibio.book.chapters import ARTEFACTS, chapter_of
from medibio.book.runpages import row_label
from medibio.results import recorded

SUMMARY_FILE = "summary.json"
# Library chatter that has no place in a rendered chapter: the book starts its kernels with these variables
# (transformers and datasets read them when imported); a chapter opened in JupyterLab quiets the same
# libraries through their logging APIs instead (:func:`quiet_libraries`).
QUIET_ENV = {"TQDM_DISABLE": "1", "TOKENIZERS_PARALLELISM": "false",
             "HF_HUB_DISABLE_PROGRESS_BARS": "1", "HF_DATASETS_DISABLE_PROGRESS_BARS": "1",
             "TRANSFORMERS_VERBOSITY": "error", "DATASETS_VERBOSITY": "error", "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1"}


@dataclass
class ChapterContext:
    """Execution context of one chapter: resolved parameters and locations, and what it has shown so far."""

    name: str
    profile: str
    settings: Settings
    params: SimpleNamespace = field(default_factory=SimpleNamespace)
    tables: dict[str, dict[str, Any]] = field(default_factory=dict)
    figures: dict[str, str] = field(default_factory=dict)
    values: dict[str, Any] = field(default_factory=dict)
    reproductions: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def results_root(self) -> Path:
        return self.settings.results_root

    @property
    def data_root(self) -> Path | None:
        """The data root, None when there is none (chapters that need data say so instead of failing)."""
        return self.settings.data_root if self.settings.data_root.is_dir() else None

    @property
    def out_dir(self) -> Path:
        return self.results_root / "book" / self.profile / self.name

    @property
    def has_data(self) -> bool:
        return self.data_root is not None

    def table(self, key: str, frame: pd.DataFrame, caption: str = "", paper_vs_ours: bool = False,
              precision: int = 2, links: Mapping[tuple[str, str], str] | None = None) -> Any:
        """Record ``frame`` under ``key`` and show it (paper/ours/diff coloured); ``links`` maps (row label,
        column label) to a URL relative to the HTML root (:func:`medibio.book.runpages.table_links`).

        In a notebook the table is displayed right away, so every table of a cell reaches the page (a returned
        value shows only when it is the cell's last expression); outside IPython the Styler is returned."""
        self.tables[key] = {"rows": [str(i) for i in frame.index], "columns": [str(c) for c in frame.columns],
                            "n_rows": int(len(frame)), "caption": caption}
        self.save()
        styler = style(frame, caption=caption, diff_columns=_diff_columns(frame) if paper_vs_ours else (),
                       precision=precision)
        if links:
            styler = _linked(styler, frame, links)
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
        (run records: ``status``, and ``recorded`` for reference results committed to the repository) or,
        for what is computed without runs (the field analysis), an explicit ``status``; the first page's index
        is built from these notes."""
        recs = list(records)
        ok = [r for r in recs if getattr(r, "status", "ok") == "ok"]
        recorded = [r for r in ok if getattr(r, "recorded", False)]
        if status is None:
            parts = []
            if len(recorded) < len(ok):
                made = "rendered from recorded runs" if self.settings.recorded else "reproduced on this profile"
                parts.append(f"{made} ({len(ok) - len(recorded)} runs)")
            if recorded:
                parts.append(f"recorded result ({len(recorded)} runs)")
            status = "; ".join(parts) or "paper numbers only"
        if self.settings.limit and status != "paper numbers only":
            status += f" — limited to {self.settings.limit} examples per split: a code-path check, not a result"
        self.reproductions[artefact] = {"status": status, "section": section, "runs": len(ok)}
        self.save()

    def value(self, key: str, value: Any) -> Any:
        """Record a key number (a score, a count) the tests or the appendix read back."""
        self.values[key] = value
        self.save()
        return value

    @contextlib.contextmanager
    def quiet(self, name: str = "training") -> Iterator[None]:
        """Long work with its progress where the reader is, and without library chatter on the page.

        Progress bars and run lines go to the terminal that started the kernel (``medibio book``,
        ``papermill``; see :mod:`medibio.core.progress`) and, live, into this cell, which keeps one summary line
        ("19 runs — 13 trained now (34:10), 6 reused from their records"). Whatever else the libraries print
        on stderr is kept in ``<out_dir>/<name>.stderr.log`` rather than on the page.
        """
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
                   "values": self.values, "reproductions": self.reproductions,
                   "updated": datetime.now(timezone.utc).isoformat(timespec="seconds")}
        return write_json(self.out_dir / SUMMARY_FILE, payload)


def quiet_libraries() -> None:
    """transformers and datasets without progress bars and advisory warnings in the cells (what
    :data:`QUIET_ENV` does for the book's kernels, through the libraries' own switches)."""
    import datasets
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    datasets.disable_progress_bars()
    datasets.utils.logging.set_verbosity_error()


def setup(name: str, profile: str, data_root_param: str | Path | None = "",
          results_root_param: str | Path | None = "", **params: Any) -> ChapterContext:
    """The boundary of a chapter: check its parameters, build its settings, set plotting defaults.

    ``params`` are the chapter's own parameters (``tasks``, ``seeds``, ...): validated, and ``None`` taken
    from the profile (:func:`medibio.book.parameters.resolve`); the result is ``chapter.params``. Empty
    paths mean "the session's": ``$MEDIBIO_DATA`` or ``../shared/data``; ``$MEDIBIO_RESULTS`` or ``results/``
    (:meth:`medibio.core.settings.Settings.from_env`), so a notebook opened in JupyterLab runs with its
    defaults, and papermill can point it elsewhere. ``chapter.settings`` goes to every library call.
    """
    import matplotlib
    import seaborn as sns

    resolved = resolve(profile, **params)
    progress.terminal()  # pin the launcher's terminal before any cell redirects stderr
    settings = Settings.from_env(
        data_root=Path(data_root_param).expanduser().resolve() if data_root_param else None,
        results_root=Path(results_root_param).expanduser().resolve() if results_root_param else None)
    settings = settings.replace(results_root=settings.results_root.resolve())
    progress.configure(settings.progress)
    quiet_libraries()
    matplotlib.rcParams.update({"figure.dpi": 100, "savefig.dpi": 110})
    sns.set_theme(style="whitegrid", context="notebook")
    pd.set_option("display.precision", 2)
    chapter = ChapterContext(name=name, profile=resolved.profile, settings=settings, params=resolved)
    from IPython.display import Markdown, display

    chapter.values["built"] = built_by(settings, resolved.profile)
    display(Markdown(chapter.values["built"]))
    if settings.limit:
        chapter.values["limit"] = settings.limit
        display(Markdown(f"**Limited build:** every run of this chapter used at most {settings.limit} examples "
                         f"per split (`--limit`, `$MEDIBIO_LIMIT`): the `{resolved.profile}` profile's code "
                         "path end to end, not its results."))
    chapter.save()
    return chapter


def built_by(settings: Settings, profile: str) -> str:
    """The line at the top of every page saying how this build got its numbers: re-executed on a profile, or
    rendered from recorded results (whose commits, devices and lock digests their records name)."""
    if settings.recorded is not None:
        made = recorded.origin(settings.recorded)
        return (f"**Rendered from recorded results** of commit {', '.join(made['commits']) or '?'} "
                f"({made['runs']} runs in `{settings.recorded.name}/`, computed on {'; '.join(made['devices'])}; "
                f"lock {', '.join(made['locks']) or '?'}): no run was trained for this page.")
    commit = (provenance.git_commit() or "not a git checkout")[:8]
    return (f"**Re-executed on profile `{profile}`** by commit {commit}: runs without a record in the results "
            "root were trained by this build, the others reused from their records.")


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


def _linked(styler: Any, frame: pd.DataFrame, links: Mapping[tuple[str, str], str]) -> Any:
    """Each linked cell's formatted text inside an anchor (chapter pages live in ``book/``, hence ``../``)."""
    rows = [row_label(i) for i in frame.index]
    columns = [str(c) for c in frame.columns]
    for (row, column), url in links.items():
        if row in rows and column in columns:
            i, j = rows.index(row), columns.index(column)
            text = styler._display_funcs[(i, j)](frame.iat[i, j])
            styler = styler.format(lambda _, t=text, u=url: f'<a href="../{u}">{t}</a>',
                                   subset=pd.IndexSlice[[frame.index[i]], [frame.columns[j]]])
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


def reproduction_index(results_root_dir: str | Path, profile: str) -> pd.DataFrame:
    """Every figure and table of the paper -> the chapter reproducing it and what that chapter showed on this
    profile, read from the chapters' summaries (written from the run records each chapter used)."""
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
    path = Path(results_root_dir) / "book" / profile / chapter / SUMMARY_FILE
    return json.loads(path.read_text(encoding="utf-8"))
