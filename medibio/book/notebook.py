"""Glue the chapter notebooks share: parameters, paper-vs-ours tables, figures, summaries.

Notebooks hold no logic beyond calling the library; what every chapter needs to show its results the
same way lives here. :func:`setup` validates a chapter's parameters in its first cell and fills every value
left at ``None`` from the profile (:mod:`medibio.core.profiles`), so a chapter run by papermill, in JupyterLab or by
``medibio book`` with the same profile runs the same thing. Each chapter also writes a small
``summary.json`` (tables and their rows, figures, key numbers, which paper artefacts it reproduced from
which records) under ``<results_root>/book/<profile>/<chapter>/``: the tests read it, the first page builds
its index from it, and the appendix lists it. Every table is also written there as CSV and JSON, linked
under the table on the page, and every number of the prose is glued (:meth:`ChapterContext.glue`, myst-nb's
``{glue:text}`` role in the markdown cells) rather than typed or printed.
"""

from __future__ import annotations

import contextlib
import html
import io
import json
import os
import re
import sys
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from urllib.parse import quote

import pandas as pd

from medibio.book.chapters import ARTEFACTS, chapter_of
from medibio.book.numbers import P_VALUE
from medibio.book.parameters import resolve
from medibio.core import charts, launch, paths, profiles, progress, provenance
from medibio.core.atomic import write_json, write_text
from medibio.core.settings import Settings
from medibio.models import zoo
from medibio.results import recorded

SUMMARY_FILE = "summary.json"
TABLES_DIR = "tables"  # a chapter's tables as CSV and JSON, under its output folder
NOT_AVAILABLE = "–"  # what a glued value reads where this build has none (every key is glued on every profile)
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
    glued: dict[str, str] = field(default_factory=dict)
    reproductions: dict[str, dict[str, Any]] = field(default_factory=dict)
    # the folder of the executed notebook (a kernel's working folder: ``medibio book`` runs each chapter in
    # book/, JupyterLab in the notebook's folder); download links are relative to it
    page_dir: Path = field(default_factory=Path.cwd)
    # the encoder this chapter's runs fine-tune (chapters with a ``model`` parameter); named on its tables and
    # figures, since a book can be built for any model (``medibio book --model``)
    model: str | None = None
    # what the page says about how it was built (provenance, presets, limit): shown under the chapter's first
    # table or figure, so that a page opens with its result
    notes: list[str] = field(default_factory=list)

    @property
    def built_for(self) -> str:
        """`` · built for <model> on profile <profile>`` (empty for a chapter without a model)."""
        return f" · built for {zoo.display_name(self.model)} on profile {self.profile}" if self.model else ""

    def _made_by(self, printed: bool, made_by: str) -> str:
        """What a caption or a figure's corner says made its numbers: nothing for the paper's printed numbers,
        ``made_by`` where the caller names other runs' models, else this build's model (:attr:`built_for`)."""
        return "" if printed else f" · {made_by}" if made_by else self.built_for

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

    def data_file(self, relative: str | Path) -> Path:
        """A path under the data root for a chapter that cannot go on without it: a missing root fails with
        the error that says how to get one, not a ``TypeError`` on ``None / name``."""
        return paths.data_root(self.settings.data_root) / relative

    def table(self, key: str, frame: pd.DataFrame, caption: str = "", paper_vs_ours: bool = False,
              precision: int = 2, links: Mapping[tuple[str, str], str] | None = None,
              provenance: bool = False, printed: bool = False, made_by: str = "", row_labels: bool = True) -> Any:
        """Record ``frame`` under ``key``, write it as CSV and JSON, and show it (paper/ours/diff coloured) with
        links to both files right under it.

        ``links`` maps (row, column) labels as :func:`label_text` spells them to a page of the built book,
        given relative to the HTML root (``runs/.../index.html``): that cell keeps its formatted text and
        becomes a link to the page (chapter pages sit one folder down, in ``book/``). The files hold the
        plain values and every column; the page leaves out the provenance columns (:data:`PROVENANCE_COLUMNS`:
        digests and commits belong to the run pages and Appendix B, not between the scores) unless
        ``provenance``, and names a ``<column>_diff`` column "ours − <column>". A ``printed`` table (the paper's
        own numbers, as printed) names no model in its caption: no model of this build made it; ``made_by`` names
        what did where it is not this build's model (recorded runs of another profile's models), in its place.
        ``row_labels=False`` leaves the index off the page (the files keep it): the claims' ids, say, where the
        claim's own words head each row and the page needs its width for them.
        In a notebook the table is displayed right away, so every table of a cell reaches the page (a returned
        value shows only when it is the cell's last expression); outside IPython the Styler is returned."""
        files = write_table(frame, self.out_dir / TABLES_DIR, key)
        caption = caption + self._made_by(printed, made_by) if caption else caption
        self.tables[key] = {"rows": [str(i) for i in frame.index], "columns": [str(c) for c in frame.columns],
                            "n_rows": int(len(frame)), "caption": caption,
                            "files": {kind: str(path) for kind, path in files.items()}}
        self.save()
        shown = for_the_page(frame, provenance)
        hidden = {label_text(c) for c in frame.columns} - {label_text(c) for c in shown.columns}
        links = {cell: url for cell, url in (links or {}).items() if cell[1] not in hidden}
        frame = shown
        styler = style(frame, caption=caption, diff_columns=_diff_columns(frame) if paper_vs_ours else (),
                       precision=precision, links=links, row_labels=row_labels)
        if not _in_kernel():
            return styler
        from IPython.display import Markdown, display

        display(styler)
        display(Markdown(downloads(files, self.page_dir)))
        self._show_notes()
        return None

    def _show_notes(self) -> None:
        """Display the pending :attr:`notes` once, right after the page's first table or figure."""
        if not self.notes or not _in_kernel():
            return
        from IPython.display import Markdown, display

        display(Markdown("\n\n".join(self.notes)))
        self.notes = []

    def glue(self, key: str, value: Any, fmt: str | Callable[[Any], str] = "{}") -> str:
        """Glue ``value``, formatted by ``fmt`` (a format string or a function), for the ``{glue:text}`key` ``
        role of a markdown cell, and record it (raw in ``values``, as shown in ``glued``).

        The text is glued rather than the number so that a value this build does not have (``None``, NaN)
        reads :data:`NOT_AVAILABLE` instead of leaving the key undefined: a key that a markdown cell names
        and no cell glued fails the book build (myst-nb's warning, with Sphinx's ``-W``)."""
        text = self._glued(key, value, fmt)
        self.save()
        return text

    def glue_all(self, numbers: Mapping[str, tuple[Any, str | Callable[[Any], str]]]) -> dict[str, str]:
        """:meth:`glue` each ``key: (value, format)`` (what :mod:`medibio.book.numbers` computes); the summary
        is written once, after the last."""
        texts = {key: self._glued(key, value, fmt) for key, (value, fmt) in numbers.items()}
        self.save()
        return texts

    def _glued(self, key: str, value: Any, fmt: str | Callable[[Any], str]) -> str:
        text = glue_text(value, fmt)
        self.values[key] = None if _missing(value) else value
        self.glued[key] = text
        if _in_kernel():
            from myst_nb import glue

            glue(key, text, display=False)
        return text

    def figure(self, key: str, fig: Any, notes: bool = True, narrow: Any = None, printed: bool = False,
               made_by: str = "", alt: str = "") -> Any:
        """Save ``fig`` as PNG under the chapter's output folder, record it, and display it in a notebook
        (outside one, return it); the page's pending notes follow it unless ``notes`` is False (a page whose
        first figure and table belong together).

        ``narrow`` is the same figure drawn for a phone: saved beside it (``<key>-narrow.png``, at twice the
        resolution) and shown instead of ``fig`` on a screen up to :data:`NARROW_SCREEN_PX` wide, where the wide
        figure would be shrunk until its text cannot be read (one ``<picture>``, so the page has one image). A
        ``printed`` figure draws the paper's own numbers and names no model, and ``made_by`` names other runs'
        models in its corner (as :meth:`table`). ``alt`` says what it shows to a reader who cannot see it
        (default: its title); the page shows the PNG saved here, which carries it (:mod:`medibio.book.alt_text`)."""
        label = self._made_by(printed, made_by).lstrip(" ·")
        alt = alt or charts.title(fig)
        path = self._save_figure(key, fig, FIGURE_DPI, label, alt)
        small = None if narrow is None else self._save_figure(f"{key}-narrow", narrow, 2 * FIGURE_DPI, label, alt)
        self.figures[key] = str(path)
        self.save()
        if not _in_kernel():
            return fig
        import matplotlib.pyplot as plt
        from IPython.display import HTML, Image, display

        # here, so that the notes under the first result come after it
        display(Image(filename=str(path)) if small is None else HTML(responsive_image(path, small, alt or key)))
        plt.close(fig)
        if narrow is not None:
            plt.close(narrow)
        if notes:
            self._show_notes()
        return None

    def _save_figure(self, key: str, fig: Any, dpi: int, label: str = "", alt: str = "") -> Path:
        path = self.out_dir / "figures" / f"{key}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        if label and not getattr(fig, "_medibio_built_for", False):
            # under the figure's canvas (the saved PNG's tight box takes it in), where no tick label can be
            fig.text(0.99, -0.005, label, ha="right", va="top", fontsize=7, color="#555")
            fig._medibio_built_for = True  # a figure saved twice is labelled once
        fig.savefig(path, dpi=dpi, bbox_inches="tight", metadata=charts.png_metadata(fig, alt))
        return path

    def reproduces(self, artefact: str, records: Iterable[Any] = (), section: str = "",
                   status: str | None = None) -> None:
        """Note that this chapter shows our own numbers for a figure/table of the paper, from ``records``
        (run records: ``status``, and ``recorded`` for reference results committed to the repository) or,
        for what is computed without runs (the field analysis), an explicit ``status``; the first page's index
        is built from these notes."""
        # a run listed twice counts once (a recorded run and this build's run of the same key are two runs)
        recs = list({(getattr(r, "run_id", None) or id(r), bool(getattr(r, "recorded", False))): r
                     for r in records}.values())
        ok = [r for r in recs if getattr(r, "status", "ok") == "ok"]
        recorded = [r for r in ok if getattr(r, "recorded", False)]
        if status is None:
            parts = []
            if made_here := [r for r in ok if not getattr(r, "recorded", False)]:
                made = "rendered from recorded runs" if self.settings.recorded else "reproduced on this profile"
                parts.append(f"{made}: {_runs_by_profile(made_here)}")
            if recorded:
                parts.append(f"recorded in {REFERENCE_NAME}: {_runs_by_profile(recorded)}")
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

    def figure_file(self, key: str, path: str | Path, width: int | None = None) -> Any:
        """Record a PNG a library function already wrote, and return it for display (``width``: its width on
        the page in pixels, for a small figure that would otherwise fill a desktop screen; a phone shrinks it)."""
        from IPython.display import Image, display

        self.figures[key] = str(path)
        self.save()
        image = Image(filename=str(path), width=width)
        if not _in_kernel():
            return image
        display(image)
        self._show_notes()
        return None

    def save(self) -> Path:
        payload = {"chapter": self.name, "profile": self.profile, "model": self.model,
                   "data_root": str(self.data_root) if self.data_root else None,
                   "results_root": str(self.results_root), "tables": self.tables, "figures": self.figures,
                   "values": self.values, "glued": self.glued, "reproductions": self.reproductions,
                   "updated": datetime.now(timezone.utc).isoformat(timespec="seconds")}
        return write_json(self.out_dir / SUMMARY_FILE, payload)


PROVENANCE_COLUMNS = frozenset({"digest", "commit", "config_digest", "git_commit", "run", "record", "lock", "device",
                                "CPU", "created", "machine"})


THEME = Path(__file__).with_name("theme.mplstyle")  # the book's figure style (seaborn's whitegrid, notebook)
FIGURE_DPI = 110  # resolution of a chapter figure's PNG (the page scales a wide one down to its column)
NARROW_SCREEN_PX = 700  # up to this screen width a page shows a figure's narrow variant (ChapterContext.figure)


def responsive_image(wide: Path, narrow: Path, alt: str) -> str:
    """One ``<picture>`` of two PNGs, embedded: ``narrow`` (saved at twice :data:`FIGURE_DPI`, so it keeps its
    drawn size and is sharp on a phone's screen) up to :data:`NARROW_SCREEN_PX`, ``wide`` above."""
    import base64

    def data(path: Path) -> str:
        return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")

    return (f'<picture><source media="(max-width: {NARROW_SCREEN_PX}px)" srcset="{data(narrow)} 2x">'
            f'<img src="{data(wide)}" alt="{html.escape(alt, quote=True)}" style="max-width: 100%; height: auto;">'
            "</picture>")


def for_the_page(frame: pd.DataFrame, provenance: bool = False) -> pd.DataFrame:
    """``frame`` as a page shows it: without :data:`PROVENANCE_COLUMNS` (unless ``provenance``), and a
    difference column ``X_diff`` named "ours − X"."""
    hidden = [] if provenance else [c for c in frame.columns if label_text(c) in PROVENANCE_COLUMNS]
    shown = frame.drop(columns=hidden) if len(hidden) < len(frame.columns) else frame
    return shown.rename(columns=lambda c: f"ours − {c.removesuffix('_diff')}" if isinstance(c, str)
                        and c.endswith("_diff") else c)


def _in_kernel() -> bool:
    """Whether this runs in an IPython kernel (a notebook), where tables and glued values are displayed."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    return get_ipython() is not None


def glue_text(value: Any, fmt: str | Callable[[Any], str] = "{}") -> str:
    """What a glued value reads on the page: ``value`` formatted by ``fmt``, :data:`NOT_AVAILABLE` where the
    build has no value (``None``, NaN)."""
    if _missing(value):
        return NOT_AVAILABLE
    return fmt(value) if callable(fmt) else fmt.format(value)


def label_text(label: Any) -> str:
    """A row or column label as :meth:`ChapterContext.table`'s ``links`` name it: the label itself, or the
    levels of a MultiIndex entry joined by " / " (``("all-MiniLM-L6-v2", "GAD")`` → ``"all-MiniLM-L6-v2 / GAD"``)."""
    return " / ".join(map(str, label)) if isinstance(label, tuple) else str(label)


def write_table(frame: pd.DataFrame, folder: Path, key: str) -> dict[str, Path]:
    """``frame`` as ``<key>.csv`` and ``<key>.json`` (pandas' "split" layout: ``index``, ``columns`` and
    ``data`` row by row, which any table has, MultiIndex rows included), each written atomically; plain
    values at full precision, no markup."""
    return {"csv": write_text(folder / f"{key}.csv", frame.to_csv()),
            "json": write_text(folder / f"{key}.json",
                               frame.to_json(orient="split", indent=1, force_ascii=False, default_handler=str))}


def downloads(files: Mapping[str, Path], page_dir: Path, what: str = "this table") -> str:
    """The Markdown line under a table: links to its files (``what`` they hold), relative to the page's folder.
    The book renders notebook Markdown as MyST (``nb_render_markdown_format: myst``), which makes a link to a
    local file a download: Sphinx copies the file into ``_build/html/_downloads/`` and points the link there; a
    link to a missing file fails the build."""
    links = [f"[{kind.upper()}](<{os.path.relpath(path, page_dir)}>)" for kind, path in files.items()]
    return f"Download {what}: " + " · ".join(links)


def quiet_libraries() -> None:
    """transformers and datasets without progress bars and advisory warnings in the cells (what
    :data:`QUIET_ENV` does for the book's kernels). A library not imported yet reads its switches from the
    environment when it is, so it is not imported here (a chapter that never uses it saves a second); one
    already imported is quieted through its logging API."""
    # tqdm.auto (imported by the hub client) warns once per kernel that ipywidgets is absent; the book's bars go
    # to the launcher's terminal, never to widgets, so the warning would only clutter the first cell of a page.
    warnings.filterwarnings("ignore", message="IProgress not found")
    for name in _LIBRARY_SWITCHES:
        launch.declare_default(name, QUIET_ENV[name])
    if "datasets" in sys.modules:
        import datasets

        datasets.disable_progress_bars()
        datasets.utils.logging.set_verbosity_error()
    if "transformers" in sys.modules:
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()


# the switches of QUIET_ENV that only transformers, datasets and the hub client read (TQDM_DISABLE would also
# silence this library's own bars in a cell)
_LIBRARY_SWITCHES = ("HF_HUB_DISABLE_PROGRESS_BARS", "HF_DATASETS_DISABLE_PROGRESS_BARS", "TRANSFORMERS_VERBOSITY",
                     "DATASETS_VERBOSITY", "TRANSFORMERS_NO_ADVISORY_WARNINGS")


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
    import matplotlib.style

    resolved = resolve(profile, **params)
    progress.terminal()  # pin the launcher's terminal before any cell redirects stderr
    settings = Settings.from_env(
        data_root=Path(data_root_param).expanduser().resolve() if data_root_param else None,
        results_root=Path(results_root_param).expanduser().resolve() if results_root_param else None)
    settings = settings.replace(results_root=settings.results_root.resolve())
    progress.configure(settings.progress)
    quiet_libraries()
    matplotlib.style.use(THEME)  # seaborn's whitegrid look, without importing seaborn where nothing needs it
    matplotlib.rcParams.update({"figure.dpi": 100, "savefig.dpi": FIGURE_DPI})
    pd.set_option("display.precision", 2)
    model = getattr(resolved, "model", None)
    chapter = ChapterContext(name=name, profile=resolved.profile, settings=settings, params=resolved, model=model)
    log_warnings(chapter.out_dir / "warnings.log")
    made = recorded.origin(settings.recorded) if settings.recorded is not None else None  # read once: 648 records
    chapter.values["built"] = built_by(settings, resolved.profile, model, made)
    chapter.notes.append(provenance_line(settings, resolved.profile, model, made))
    if model is not None:
        chapter.values["model"] = zoo.display_name(model)
        note = presets_note(resolved.profile, model)
        if note:
            chapter.values["presets_note"] = note
            chapter.notes.append(note)
    if settings.limit:
        chapter.values["limit"] = settings.limit
        chapter.notes.append(f"**Limited build:** every run of this chapter used at most {settings.limit} examples "
                             f"per split (`--limit`, `$MEDIBIO_LIMIT`): the `{resolved.profile}` profile's code "
                             "path end to end, not its results.")
    chapter.save()
    return chapter


def log_warnings(path: Path) -> None:
    """Send Python warnings of this kernel to ``path`` instead of the cell's stderr: a library's warning
    (with the file it came from, an absolute path of this machine) is for whoever builds the book, not for
    the page's reader."""
    def show(message: Any, category: type, filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as out:
            out.write(warnings.formatwarning(message, category, filename, lineno, line))

    warnings.showwarning = show


APPENDIX_B = "appendix_b_reproducibility.html"  # a chapter page's link to the appendix that lists every run


def provenance_line(settings: Settings, profile: str, model: str | None = None,
                    made: dict[str, Any] | None = None) -> str:
    """The short line under a page's first result: how this build got its numbers and the commit that built
    it; the runs' own commits, machines and lock files are one link away (Appendix B), not on every page.
    ``made``: :func:`medibio.results.recorded.origin` of the recorded results, where the caller has it."""
    commit = provenance.git_commit()
    by = f"commit {commit[:8]}" if commit else "code outside a git checkout"
    appendix = f"every run's commit, machine and lock file: <a href=\"{APPENDIX_B}\">Appendix B</a>"
    if settings.recorded is not None:
        runs = (made or recorded.origin(settings.recorded))["runs"]
        return (f"<small>Rendered by {by} from the {runs:,} runs recorded in <code>{settings.recorded.name}/</code> "
                f"(none trained for this page); {appendix}.</small>")
    built_for = f" for model <code>{html.escape(zoo.display_name(model))}</code>" if model else ""
    return (f"<small>Re-executed on profile <code>{profile}</code>{built_for} by {by} (runs without a record "
            f"were trained, the others reused); {appendix}.</small>")


def presets_note(profile: str, model: str) -> str:
    """What a page says when its model is not the one the profile's presets were tuned for (they are applied
    unchanged: one set of presets per profile), else ""."""
    made_for = profiles.get(profile).model
    if zoo.same_model(model, made_for):
        return ""
    return (f"**Presets made for another model:** the `{profile}` profile's fine-tuning presets (learning rates, "
            f"epochs, caps, poolings) were chosen for `{zoo.display_name(made_for)}`; this build applies them "
            f"unchanged to `{zoo.display_name(model)}`, so its scores are that model's under those presets, not "
            "tuned for it.")


def built_by(settings: Settings, profile: str, model: str | None = None, made: dict[str, Any] | None = None) -> str:
    """The line at the top of every page saying how this build got its numbers: re-executed on a profile (for
    ``model``, on the chapters that fine-tune one), or rendered from recorded results (whose commits, devices
    and lock digests their records name; ``made``: their :func:`medibio.results.recorded.origin`, if read)."""
    if settings.recorded is not None:
        made = made or recorded.origin(settings.recorded)
        return (f"**Rendered from recorded results** of commit {', '.join(made['commits']) or '?'} "
                f"({made['runs']} runs in `{settings.recorded.name}/`, computed on {'; '.join(made['devices'])}; "
                f"lock {', '.join(made['locks']) or '?'}): no run was trained for this page.")
    commit = provenance.git_commit()
    by = f"by commit {commit[:8]}" if commit else "outside a git checkout (no commit to name)"
    built_for = f" for model `{zoo.display_name(model)}`" if model else ""
    return (f"**Re-executed on profile `{profile}`**{built_for} {by}: runs without a record in the results root "
            "were trained by this build, the others reused from their records.")


def _diff_columns(frame: pd.DataFrame) -> tuple[str, ...]:
    return tuple(str(c) for c in frame.columns
                 if (str(c).lower().startswith(("diff", "Δ", "delta", "gain", "ours − ")) or str(c).endswith("_diff"))
                 and pd.api.types.is_numeric_dtype(frame[c]))


def style(frame: pd.DataFrame, caption: str = "", diff_columns: Iterable[str] = (), precision: int = 2,
          links: Mapping[tuple[str, str], str] | None = None, row_labels: bool = True) -> Any:
    """A pandas Styler as the paper prints numbers: counts as integers with thousands separators (Table 5's
    90,000 steps, not 90000.00; a column of runs or seeds, 42 not 42.00), scores with fixed precision, flags as
    words ("yes"/"no", never ``True``), lists as comma-separated text, "–" for missing values, coloured
    differences; the table scrolls sideways inside the page when it is wider than the page. ``links``: see
    :meth:`ChapterContext.table`. A named index's name stands in the header row's first cell, not on a row
    of its own (a lone "id" line above the table); the names of a several-level index, which cannot share
    that cell, are left out (the labels say what they are), and row numbers (an unnamed default index) are not
    shown: they number nothing a reader looks up; nor are any row labels with ``row_labels=False``."""
    if frame.index.nlevels == 1 and frame.columns.nlevels == 1 and frame.index.name and frame.columns.name is None:
        frame = frame.rename_axis(index=None, columns=frame.index.name)
    hidden = {"names": True} if frame.index.nlevels > 1 and frame.columns.nlevels == 1 else {}
    numbered = (isinstance(frame.index, pd.RangeIndex) and frame.index.name is None and len(frame)) or not row_labels
    numeric = [c for c in frame.columns if pd.api.types.is_numeric_dtype(frame[c])
               and not pd.api.types.is_bool_dtype(frame[c])]
    whole = {c for c in numeric if _whole_numbers(frame[c], c)}
    formats = {c: _count if c in whole else _p_value if c in numeric and _is_p(c) else _score(precision)
               if c in numeric else _plain(precision) for c in frame.columns}
    styler = frame.style.format(formats)
    styler = styler.format_index(_plain(precision), axis=0).format_index(_plain(precision), axis=1)
    for (row, column), url in _cells(frame, links or {}).items():
        styler = styler.format(_linked(formats[column], url), subset=pd.IndexSlice[[row], [column]])
    if hidden or numbered:
        styler = styler.hide(axis="index", **hidden)
    styler = styler.set_table_attributes('style="display: block; overflow-x: auto; max-width: 100%;"')
    # the caption as a block of the table's visible width: as a table caption it would span a wide table's full
    # width, centred, and on a phone be cut at the screen's edge along with the columns that scroll
    styler = styler.set_table_styles([{"selector": "th, td", "props": "padding: 0.2em 0.7em;"},
                                      {"selector": "caption", "props": "display: block;"}], overwrite=False)
    intervals = [c for c in frame.columns if c not in numeric
                 and frame[c].map(lambda v: isinstance(v, str) and bool(_INTERVAL.match(v))).any()]
    if intervals:  # "-1.17 [-2.99, +0.66]" reads as one piece: broken over three lines it reads as three numbers
        styler = styler.set_properties(subset=intervals, **{"white-space": "nowrap"})
    diffs = [c for c in frame.columns if str(c) in set(diff_columns)]
    if diffs:
        styler = styler.map(_diff_colour, subset=diffs)
    if caption:
        styler = styler.set_caption(caption)
    return styler


# a score or difference with its interval, as the claims' tables print it
_INTERVAL = re.compile(r"^[+\-−]?\d[\d,.]* \[[+\-−]?\d[\d,.]*, [+\-−]?\d[\d,.]*\]$")


def _missing(value: Any) -> bool:
    return value is None or (pd.api.types.is_scalar(value) and bool(pd.isna(value)))


def _count(value: Any) -> str:
    return NOT_AVAILABLE if _missing(value) else f"{value:,.0f}"


def _is_p(column: Any) -> bool:
    """A p-value column ("p", "p-value", "p (paired bootstrap)")."""
    name = label_text(column)
    return name == "p" or name.startswith(("p ", "p-value"))


def _p_value(value: Any) -> str:
    """A p-value as the prose gives it (:data:`medibio.book.numbers.P_VALUE`): 0.005 is no 0.01."""
    return NOT_AVAILABLE if _missing(value) else P_VALUE.format(value)


def _score(precision: int) -> Callable[[Any], str]:
    """Fixed precision, except a value it would print as zero (a learning rate of 1e-4 is no 0.00): three
    significant digits."""
    smallest = 0.5 * 10 ** -precision

    def shown(value: Any) -> str:
        if _missing(value):
            return NOT_AVAILABLE
        return f"{value:.3g}" if 0 < abs(value) < smallest else f"{value:.{precision}f}"

    return shown


def cell_text(value: Any, precision: int = 2) -> str:
    """A value of a text, flag or mixed column as a reader wants it: "yes"/"no" for a flag, integers as
    integers, floats at the table's precision, a list as comma-separated text, "–" where there is none."""
    import numpy as np

    if isinstance(value, (list, tuple, set, frozenset, np.ndarray)):
        return ", ".join(cell_text(v, precision) for v in value) or NOT_AVAILABLE
    if isinstance(value, dict):
        return "; ".join(f"{k}: {cell_text(v, precision)}" for k, v in value.items()) or NOT_AVAILABLE
    if _missing(value):
        return NOT_AVAILABLE
    if isinstance(value, (bool, np.bool_)) or value in ("True", "False"):  # a flag, or one a table made text
        return "yes" if value in (True, "True") else "no"
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    if isinstance(value, (float, np.floating)):
        return f"{value:.{precision}f}"
    return str(value)


def _plain(precision: int) -> Callable[[Any], str]:
    """Text, flags and mixed columns: :func:`cell_text`."""
    return lambda value: cell_text(value, precision)


def _cells(frame: pd.DataFrame, links: Mapping[tuple[str, str], str]) -> dict[tuple[Any, Any], str]:
    """``links`` keyed by the frame's own labels; a key naming no row or column is an error that lists the
    labels there are (the caller computed its keys from another frame)."""
    rows = {label_text(r): r for r in frame.index}
    columns = {label_text(c): c for c in frame.columns}
    out = {}
    for (row, column), url in links.items():
        if row not in rows or column not in columns:
            raise ValueError(f"link for cell ({row!r}, {column!r}): no such "
                             f"{'row' if row not in rows else 'column'}; rows: {sorted(rows)}, columns: {sorted(columns)}")
        out[rows[row], columns[column]] = url
    return out


def _linked(shown: Callable[[Any], str], url: str) -> Callable[[Any], str]:
    """A cell's formatter whose text becomes a link to ``url`` (relative to the HTML root; the chapter's
    page is one folder down)."""
    href = html.escape(quote(f"../{url}", safe="/#?=&%"), quote=True)
    return lambda value: f'<a href="{href}">{shown(value)}</a>'


# column names that count things: a whole-valued column so named shows integers even below 100 (runs 42)
_COUNTS = re.compile(r"(^|[\s_(])(n|runs?|seeds?|steps?|probes?|examples?|records?|files?|papers?|epochs?|"
                     r"threads?|processes|count|pairs|sentences|documents|questions|rows|tasks|datasets|"
                     r"arms|parameters)($|[\s_)])", re.IGNORECASE)


def _whole_numbers(column: pd.Series, name: Any = "") -> bool:
    """Counts (steps, examples, seeds): an integer column, or every present value an integer and either one of
    magnitude 100 or more or a column named for a count (:data:`_COUNTS`). Scores such as 78.00 keep their
    decimals."""
    values = column.dropna().astype(float)
    if pd.api.types.is_integer_dtype(column):
        return True
    if not len(values) or not bool((values == values.round()).all()):
        return False
    return bool((values.abs() >= 100).any()) or bool(_COUNTS.search(label_text(name)))


def _diff_colour(value: Any) -> str:
    if value is None or pd.isna(value):
        return ""
    if abs(float(value)) < 0.005:
        return "color: #555"
    return "color: #1a7f37" if float(value) > 0 else "color: #b42318"


REFERENCE_NAME = f"{recorded.REFERENCE_ROOT.name}/"  # the committed results' folder, as the index names it


def _runs_by_profile(records: Sequence[Any]) -> str:
    """``9 cpu runs, 39 cpu-ift runs``: how many runs of each profile a chapter's numbers come from."""
    counts = Counter(str(getattr(r, "profile", "") or "other") for r in records)
    return ", ".join(f"{n:,} {name} run{'s' if n != 1 else ''}" for name, n in counts.items())


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
