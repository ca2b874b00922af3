"""Execute the chapter notebooks with papermill into ``book/`` and render them with jupyter-book 1.x.

Why two steps: jupyter-book's own execution cannot inject parameters, so papermill executes every
notebook of ``notebooks/`` (sources, committed without outputs) into ``book/`` with the profile's
parameters and keeps the outputs; jupyter-book then renders ``book/`` as is (``execute_notebooks: off``)
with warnings as errors.

A build *from recorded results* (``settings.recorded``, ``medibio book --from reference``) first copies the
recorded runs into its results root (:func:`medibio.results.recorded.seed_results_root`): every chapter then
plans its runs as always and reuses their records, and a run without one is an error naming it
(:class:`medibio.runs.protocol.NotRecordedError`), never a training.

A notebook that fails does not stop the others: each failure is reported with the index, execution
count and first line of its failing cell, and the build exits non-zero. ``keep_going`` still renders the
HTML in that case (the failed page shows its error), which helps to see everything else.

After jupyter-book, the run pages (:mod:`medibio.book.runpages`) are written into ``_build/html/runs/``: one
page per configuration of the built profile's run records, so every number of a results table can lead to
its run and its predictions; Sphinx never sees them.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from medibio.book import assets, background, pages, runpages
from medibio.book.chapters import BOOK_DIR, CHAPTERS, TocEntry, at_once, execution_order
from medibio.book.chapters import get as chapter_named
from medibio.book.notebook import QUIET_ENV
from medibio.core import launch, progress
from medibio.core.atomic import write_json
from medibio.core.errors import InputFormatError, MedibioError
from medibio.core.paths import REPO_ROOT
from medibio.core.settings import Settings
from medibio.results import recorded
from medibio.results.verify import verify

CONFIG_FILES = ("_config.yml", "_toc.yml")


class BookBuildError(MedibioError):
    """The HTML build failed (the message carries the end of jupyter-book's log). Raised by
    :func:`build_book` with the build's ``report``, so that the caller can still show the chapter times."""

    report: BuildReport | None = None


@dataclass
class ChapterResult:
    """What happened to one chapter."""

    slug: str
    status: str  # "executed", "failed", "copied" (markdown or unexecuted source), "kept" (--no-execute)
    seconds: float = 0.0
    output: str = ""
    cell_index: int | None = None  # 0-based index of the failing cell in the source notebook
    execution_count: int | None = None
    cell_source: str | None = None  # first line of the failing cell
    error: str | None = None  # "ExceptionName: message"

    @property
    def failed(self) -> bool:
        return self.status == "failed"

    def describe(self) -> str:
        if not self.failed:
            return f"{self.slug}: {self.status} ({self.seconds:.1f} s)"
        return (f"{self.slug}: FAILED at cell {self.cell_index} (In [{self.execution_count}]) "
                f"`{self.cell_source}`: {self.error}")


@dataclass
class BuildReport:
    """The whole build: per-chapter results, the HTML folder, timings (also saved as JSON)."""

    profile: str
    chapters: list[ChapterResult] = field(default_factory=list)
    html_dir: str | None = None
    execute_seconds: float = 0.0
    html_seconds: float = 0.0
    html_error: str | None = None
    run_pages: int = 0
    run_pages_seconds: float = 0.0
    # the estimate's seconds per chapter on its own and for the run pages, said before the build (none: no estimate)
    estimated: dict[str, float] = field(default_factory=dict)
    started: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))

    @property
    def failures(self) -> list[ChapterResult]:
        return [c for c in self.chapters if c.failed]

    @property
    def ok(self) -> bool:
        return not self.failures and self.html_dir is not None

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}

    def timing_table(self) -> str:
        """What the end of ``medibio book`` prints: each chapter's status and time, then the totals."""
        def clock(seconds: float) -> str:
            s = int(round(seconds))
            return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"

        width = max([len(c.slug) for c in self.chapters] + [7])
        lines = [f"{'chapter':<{width}}  {'status':<9} {'time':>8}"]
        for c in self.chapters:
            where = f"  cell {c.cell_index}: {c.error}" if c.failed else ""
            lines.append(f"{c.slug:<{width}}  {c.status:<9} {clock(c.seconds):>8}{where}")
        lines.append(f"{'notebooks':<{width}}  {'':<9} {clock(self.execute_seconds):>8}")
        html = "failed" if self.html_error else ""
        lines.append(f"{'html':<{width}}  {html:<9} {clock(self.html_seconds):>8}")
        lines.append(f"{'run pages':<{width}}  {self.run_pages:<9} {clock(self.run_pages_seconds):>8}")
        return "\n".join(lines)


def select(only: Sequence[str] | None = None) -> list[TocEntry]:
    """Chapters to execute: all, or those named by ``only`` (slugs or unique substrings)."""
    if not only:
        return list(CHAPTERS)
    picked = {chapter_named(name).slug for name in only}
    return [c for c in CHAPTERS if c.slug in picked]


def _read_notebook(path: Path) -> Any:
    """A chapter's notebook; one that is not a notebook (not JSON, cut short) is an :class:`InputFormatError`."""
    import nbformat

    try:
        return nbformat.read(str(path), as_version=4)
    except Exception as exc:  # noqa: BLE001 - nbformat raises several kinds for a damaged file
        shown = " ".join(str(exc).split())
        raise InputFormatError(path, None, "a Jupyter notebook (nbformat JSON)",
                               f"{type(exc).__name__}: {shown}") from None


def _declared_parameters(path: Path) -> set[str]:
    import papermill

    _read_notebook(path)
    return set(papermill.inspect_notebook(str(path)).keys())


@functools.cache
def socket_kernels() -> type:
    """The kernel manager a chapter executes under (papermill's ``kernel_manager_class``): the kernel talks
    over Unix sockets of a name of its own instead of TCP ports. A TCP kernel is given ports found free and
    binds them later, so two builds (or test workers) starting kernels at once have met on one port
    (``ZMQError: Address already in use``)."""
    import uuid

    from jupyter_client import AsyncKernelManager

    class SocketKernelManager(AsyncKernelManager):
        def __init__(self, **kwargs: Any) -> None:
            kwargs.setdefault("transport", "ipc")
            kwargs.setdefault("ip", str(Path(tempfile.gettempdir()) / f"medibio-kernel-{uuid.uuid4().hex[:16]}"))
            super().__init__(**kwargs)

    return SocketKernelManager


def execute_chapter(chapter: TocEntry, book_dir: Path, parameters: dict[str, Any],
                    kernel_name: str = assets.KERNEL_NAME, keep_failed: bool = True) -> ChapterResult:
    """Execute (or copy) one chapter into ``book_dir``; a failing notebook is reported, never raised.

    papermill writes the notebook beside the chapter (a hidden ``.partial`` notebook, which Sphinx skips), once
    it ran to its end or at its failing cell (not after every cell: rewriting a chapter's outputs after each cell
    cost the build's process about 5 of its 18 s of CPU), and the chapter is replaced only by an execution that
    ran to its end: an interrupted one (Ctrl-C, a killed kernel) leaves the previous chapter as it was. A failed execution replaces it when
    ``keep_failed`` (``--keep-going``: its page shows the error) or when there is none; otherwise it is
    kept aside as ``.<chapter>.failed.ipynb``."""
    import papermill
    from papermill.exceptions import PapermillExecutionError

    out = book_dir / chapter.output_name()
    partial = book_dir / f".{out.stem}.partial{out.suffix}"
    start = time.perf_counter()
    if not chapter.source_path.is_file():
        return ChapterResult(chapter.slug, "failed", output=str(out), error=f"missing source {chapter.source_path}")
    if not chapter.is_notebook:
        shutil.copy2(chapter.source_path, out)
        return ChapterResult(chapter.slug, "copied", time.perf_counter() - start, str(out))
    try:
        declared = _declared_parameters(chapter.source_path)
    except InputFormatError as exc:  # reported as the chapter's failure; the others still build
        return ChapterResult(chapter.slug, "failed", time.perf_counter() - start, str(out), error=str(exc))
    injected = {k: v for k, v in parameters.items() if k in declared}
    try:
        # the kernel starts in book_dir (nbclient's resources path, its cwd), not papermill's ``cwd``: that one
        # changes this process's working folder for the whole execution, and two chapters side by side would
        # restore it under each other (a kernel started in the repository root links its downloads wrongly)
        papermill.execute_notebook(str(chapter.source_path), str(partial), parameters=injected,
                                   kernel_name=kernel_name, resources={"metadata": {"path": str(book_dir)}},
                                   progress_bar=False, request_save_on_cell_execute=False,
                                   log_output=False, report_mode=False, kernel_manager_class=socket_kernels(),
                                   # the kernel's own log (transport notices, shutdown) is not the book's;
                                   # errors in cells still surface as PapermillExecutionError
                                   # and with fd capture off, what the library writes to the process's
                                   # stderr (live progress) reaches this terminal instead of the page
                                   extra_arguments=["--IPKernelApp.log_level=CRITICAL",
                                                    "--IPKernelApp.capture_fd_output=False"])
    except PapermillExecutionError as exc:
        index, source = _failing_cell(partial, exc.exec_count, exc.cell_index)
        if partial.is_file():
            aside = out if keep_failed or not out.is_file() else book_dir / f".{out.stem}.failed{out.suffix}"
            partial.replace(aside)
            if aside != out:
                progress.say(f"{chapter.slug}: the failed execution is kept aside in {aside}; {out} is the previous one")
        if out.is_file():
            _prepare(out)
        return ChapterResult(chapter.slug, "failed", time.perf_counter() - start, str(out),
                             cell_index=index, execution_count=exc.exec_count,
                             cell_source=source, error=f"{exc.ename}: {exc.evalue}")
    except Exception as exc:  # kernel died, bad notebook JSON ...: report it and build the others
        return ChapterResult(chapter.slug, "failed", time.perf_counter() - start, str(out),
                             error=f"{type(exc).__name__}: {exc}")
    else:
        partial.replace(out)
    finally:
        partial.unlink(missing_ok=True)  # an interrupted or crashed execution: the previous chapter stays
    problem = _prepare(out)  # one parameters cell, code collapsed, no stray outputs
    if problem:
        return ChapterResult(chapter.slug, "failed", time.perf_counter() - start, str(out), error=problem)
    return ChapterResult(chapter.slug, "executed", time.perf_counter() - start, str(out))


def _prepare(out: Path) -> str | None:
    """Make an executed chapter read like a page (:func:`medibio.book.pages.prepare_file`); what goes wrong
    there is reported like a failing chapter, never raised past the build's other chapters."""
    try:
        pages.prepare_file(out)
    except Exception as exc:  # a parameters cell pages cannot parse, a notebook it cannot rewrite ...
        return f"preparing the page failed: {type(exc).__name__}: {exc}"
    return None


_INSERTED_TAGS = {"injected-parameters", "papermill-error-cell-tag"}


def _failing_cell(notebook: Path, execution_count: int | None, index: int | None) -> tuple[int | None, str | None]:
    """(0-based index in the *source* notebook, first non-empty line) of the failing cell.

    Papermill inserts cells (injected parameters, an error banner at the top), so the failing cell is
    found by its execution count in the written notebook and its index counted without those cells."""
    import nbformat

    if not notebook.is_file():
        return index, None
    cells = [c for c in nbformat.read(str(notebook), as_version=4).cells
             if not _INSERTED_TAGS & set(c.get("metadata", {}).get("tags", []))]
    for i, cell in enumerate(cells):
        if cell.cell_type == "code" and execution_count is not None and cell.get("execution_count") == execution_count:
            lines = [line for line in cell.source.splitlines() if line.strip()]
            return i, (lines[0].strip() if lines else "")
    return index, None


def _copy_unexecuted(chapter: TocEntry, book_dir: Path) -> ChapterResult:
    """Put a chapter's source in book/ so the table of contents resolves (``--only``/``--no-execute``)."""
    out = book_dir / chapter.output_name()
    if out.is_file():
        return ChapterResult(chapter.slug, "kept", output=str(out))
    if chapter.is_notebook:
        import nbformat

        nbformat.write(_read_notebook(chapter.source_path), str(out))
    else:
        shutil.copy2(chapter.source_path, out)
    return ChapterResult(chapter.slug, "copied", output=str(out))


# the parameters that say which book a chapter belongs to; the others (a chapter's tasks, seeds ...) may
# differ from chapter to chapter within one book
_BOOK_IDENTITY = ("profile", "model")


def _refuse_mixing(book_dir: Path, params: dict[str, Any], kept: Sequence[TocEntry]) -> None:
    """Raise when a chapter this build keeps as it is was executed with other parameters (another profile,
    another model): one book would show two builds, and its run pages (this build's profile's) would not be
    the ones the kept chapters link to."""
    import nbformat

    differ = []
    for chapter in kept:
        path = book_dir / chapter.output_name()
        if not path.is_file():
            continue
        try:
            used = nbformat.read(str(path), as_version=4).metadata.get("papermill", {}).get("parameters", {})
        except Exception:  # noqa: BLE001 - an unreadable kept chapter is reported by the HTML build
            continue
        changed = [f"{key} {used[key]!r}" for key in _BOOK_IDENTITY
                   if key in used and key in params and used[key] != params[key]]
        if changed:
            differ.append(f"{chapter.slug} ({', '.join(changed)})")
    if differ:
        wanted = ", ".join(f"{k} {params[k]!r}" for k in _BOOK_IDENTITY if k in params)
        raise MedibioError(f"{book_dir} holds chapters executed with other parameters than this build's ({wanted}): "
                           f"{'; '.join(differ)}. Keeping them would mix two builds in one book, and the run pages "
                           "they link to would be replaced: execute every chapter (no --only), or build with their "
                           "parameters")


def execute_all(profile: str, settings: Settings, *, book_dir: Path = BOOK_DIR, only: Sequence[str] | None = None,
                execute: bool = True, extra: dict[str, Any] | None = None,
                on_result: Callable[[ChapterResult], None] | None = None,
                on_start: Callable[[TocEntry], None] | None = None, keep_failed: bool = True,
                expected: Mapping[str, float] | None = None) -> list[ChapterResult]:
    """Execute the selected chapters into ``book_dir``; the others are kept or copied unexecuted.

    Only the profile (and ``extra``) is injected as a parameter (a chapter derives everything else from it);
    the settings reach the kernels as their environment (:func:`medibio.core.launch.kernel_environment`), so
    the rendered parameters cell shows no path of the build machine. ``on_start``/``on_result`` are called
    around each executed chapter (the CLI prints them; the work inside a chapter reports its own progress
    to the same terminal, see :mod:`medibio.core.progress`). The results come in execution order.

    Where :func:`medibio.book.chapters.at_once` allows more than one, the chapters of each wave execute side by
    side (a kernel each), the longest first by ``expected`` (seconds per slug; default: the estimate's
    proportions, :func:`longest_first`) so that no long chapter is left to run alone at the end."""
    book_dir = Path(book_dir)
    book_dir.mkdir(parents=True, exist_ok=True)
    settings = settings.replace(results_root=settings.results_root.resolve())
    params: dict[str, Any] = {"profile": profile, **(extra or {})}
    if execute and not assets.kernel_ready():
        assets.install_kernel()
    chosen = {c.slug for c in select(only)}
    _refuse_mixing(book_dir, params, [c for c in CHAPTERS if c.is_notebook and not (execute and c.slug in chosen)])
    order = execution_order(CHAPTERS)
    out: dict[str, ChapterResult] = {}
    said = threading.Lock()  # the callbacks, one at a time, each chapter's end said before another starts

    def done(result: ChapterResult) -> None:
        with said:
            out[result.slug] = result
            if on_result is not None:
                on_result(result)

    def run(chapter: TocEntry) -> None:
        if on_start is not None:
            with said:
                on_start(chapter)
        done(execute_chapter(chapter, book_dir, params, keep_failed=keep_failed))

    side = at_once(settings)
    with launch.kernel_environment(settings, QUIET_ENV):
        for wave in (False, True):  # the chapters, then the pages that read them
            executed = []
            for chapter in (c for c in order if c.execute_last == wave):
                if not chapter.is_notebook:
                    done(execute_chapter(chapter, book_dir, params))  # markdown pages are always refreshed
                elif execute and chapter.slug in chosen:
                    executed.append(chapter)
                else:
                    done(_copy_unexecuted(chapter, book_dir))
            if side > 1 and len(executed) > 1:
                executed = longest_first(executed, profile, settings, expected)
            _side_by_side(executed, run, side)
    return [out[c.slug] for c in order if c.slug in out]


def _side_by_side(entries: Sequence[TocEntry], run: Callable[[TocEntry], None], side: int) -> None:
    """``run`` on every chapter, ``side`` at a time (threads, each waiting on its kernel), started in the given
    order. One at a time runs in this thread, as a build always did: Ctrl-C stops the chapter running. Side by
    side, Ctrl-C starts no other chapter and the running ones end first (each then holds a whole page or its
    previous one)."""
    if side <= 1 or len(entries) <= 1:
        for entry in entries:
            run(entry)
        return
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(max_workers=side, thread_name_prefix="chapter")
    try:
        for future in [pool.submit(run, c) for c in entries]:
            future.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def longest_first(executed: Sequence[TocEntry], profile: str, settings: Settings,
                  expected: Mapping[str, float] | None = None) -> list[TocEntry]:
    """The chapters by expected time, longest first (ties in execution order): ``expected`` seconds per slug,
    or the estimate's proportions for a build from recorded results (:mod:`medibio.book.estimate`, without
    measuring this CPU: only the order matters)."""
    if expected is None:
        from medibio.book.estimate import estimate

        found = estimate(profile, settings, executed, step=lambda precision: 1.0,
                         precision_here=lambda requested: "no", work=lambda: 1.0)
        expected = found.chapters if not isinstance(found, str) else {}
    rank = {c.slug: i for i, c in enumerate(executed)}
    return sorted(executed, key=lambda c: (-expected.get(c.slug, 0.0), rank[c.slug]))


def book_root(dest: Path, source_root: Path = REPO_ROOT) -> Path:
    """Make ``dest`` a book root like the repository's (configuration + local MathJax) for a build
    elsewhere (tests build into a temporary folder and must not touch the checkout's book/)."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in CONFIG_FILES:
        shutil.copy2(source_root / name, dest / name)
    static = dest / assets.MATHJAX_STATIC.relative_to(REPO_ROOT)
    if not static.exists():
        static.parent.mkdir(parents=True, exist_ok=True)
        static.symlink_to(assets.MATHJAX_STATIC, target_is_directory=True)
    return dest


def build_html(root: Path = REPO_ROOT, keep_going: bool = False,
               finish: Callable[[Path], Any] | None = None) -> Path:
    """Render ``root`` (``_config.yml``, ``_toc.yml``, ``book/``) into ``root/_build/html`` with ``-W``.

    The site is built in a hidden folder of ``_build/`` and ``finish(html)`` (the run pages) completes it
    there; only a complete site replaces the previous one (two renames), so a failure on the way (a full
    disk, a Sphinx error) leaves the previous site as it was. A ``_build/`` that cannot be written is an
    ``OSError`` naming it, before jupyter-book starts; a disk that fills while jupyter-book writes is said in
    one line naming ``_build/`` and what to do (:func:`disk_full`), not as the traceback that follows it."""
    assets.install_mathjax()
    build_dir = root / "_build"
    build_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".html-", dir=build_dir))
    try:
        cmd = [sys.executable, "-c", "from jupyter_book.cli.main import main; main()", "build", str(root),
               "--path-output", str(staging), "--all", "-W"]
        if keep_going:
            cmd.append("--keep-going")
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=root)
        built = staging / "_build" / "html"
        if proc.returncode != 0 or not (built / "index.html").is_file():
            full = disk_full(proc.stdout + proc.stderr)
            if full is not None:
                shutil.rmtree(staging, ignore_errors=True)  # the half-built site goes first: its space is free
                raise BookBuildError(
                    f"jupyter-book build failed (exit {proc.returncode}): the disk holding {build_dir} is full "
                    f"({full}); {shutil.disk_usage(build_dir).free / 2**20:,.0f} MiB are free there now, the "
                    "half-built site is removed and the previous _build/html kept. Free space on that disk "
                    "(`make clean-book` removes book/'s outputs and all of _build/) and build again")
            raise BookBuildError(f"jupyter-book build failed (exit {proc.returncode}):\n"
                                 + failure_summary(proc.stdout + proc.stderr))
        if finish is not None:
            finish(built)
        html = build_dir / "html"
        old = staging / "previous"
        if html.exists():
            html.rename(old)
        try:
            built.rename(html)
        except OSError:
            if old.exists() and not html.exists():
                old.rename(html)  # the previous site goes back before the staging folder is removed
            raise
        return html
    finally:
        shutil.rmtree(staging, ignore_errors=True)


_DISK_FULL = re.compile("|".join(re.escape(os.strerror(code)) for code in (errno.ENOSPC, errno.EDQUOT)))


def disk_full(log: str) -> str | None:
    """The line of a jupyter-book/Sphinx log that says the disk (or the quota) is full, whitespace folded, or
    None: said as such, that one cause replaces the traceback through Sphinx and click that follows it."""
    for line in log.splitlines():
        if _DISK_FULL.search(line):
            shown = " ".join(re.sub(r"\x1b\[[0-9;]*m", "", line).split())
            return shown if len(shown) <= 300 else shown[:297] + "..."
    return None


def failure_summary(log: str, tail: int = 15) -> str:
    """The lines of a jupyter-book/Sphinx log that say what went wrong (warnings turned errors, errors),
    then its last lines; the full log of a failed build is mostly a traceback through click and Sphinx."""
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in log.splitlines()]
    causes = []
    for i, line in enumerate(lines):
        if re.search(r"WARNING|ERROR|Warning, treated as error|SphinxWarning|Exception:|^\w*Error: ", line):
            causes.extend(lines[i:i + 2] if "treated as error" in line else [line])
    shown = list(dict.fromkeys(c.strip() for c in causes if c.strip()))[:20]
    return "\n".join([*shown, "...", *lines[-tail:]] if shown else lines[-tail:])


def build_book(profile: str, settings: Settings, *, root: Path = REPO_ROOT, only: Sequence[str] | None = None,
               execute: bool = True, keep_going: bool = False, html: bool = True,
               extra: dict[str, Any] | None = None,
               on_result: Callable[[ChapterResult], None] | None = None,
               on_start: Callable[[TocEntry], None] | None = None,
               expected: Mapping[str, float] | None = None) -> BuildReport:
    """Execute the chapters into ``root/book`` and render ``root/_build/html``; save a JSON report.

    The report goes to ``<results_root>/book/<profile>/build.json`` (the appendix shows the last one)
    unless nothing was executed. With ``settings.recorded`` the results root is first seeded from the recorded
    results and nothing trains. ``expected``: the estimate's seconds per chapter, which orders the chapters
    that execute side by side (:func:`execute_all`), kept in the report beside the times they took.
    """
    report = BuildReport(profile=profile, estimated=dict(expected or {}))
    start = time.perf_counter()
    settings = settings.replace(results_root=settings.results_root.resolve(),
                                recorded=settings.recorded.resolve() if settings.recorded else None)
    report_path = settings.results_root / "book" / profile / "build.json"
    if settings.recorded is not None and execute:
        if profile not in recorded.origin(settings.recorded)["profiles"]:
            raise MedibioError(f"{settings.recorded} holds no recorded runs of profile {profile!r}; a build from "
                               "recorded results renders a profile that was recorded")
        checked = verify(settings.recorded)  # a recording whose evidence was altered renders nothing
        if not checked.ok:
            raise MedibioError(f"the recorded results do not verify (`medibio results verify {settings.recorded}`):\n"
                               + checked.describe())
        copied = recorded.seed_results_root(settings.recorded, settings.results_root)
        progress.say(f"… rendering from the recorded results in {settings.recorded} ({copied} files copied to "
                     f"{settings.results_root}); no run trains")
    with contextlib.ExitStack() as stack:
        if settings.recorded is None and background.wanted(profile, select(only), execute):
            settings = stack.enter_context(background.beside_chapters(
                profile, settings, report_path.with_name("frozen-background.log"), say=progress.say,
                chapters=background.trains_ahead(profile, select(only)), model=(extra or {}).get("model")))
        report.chapters = execute_all(profile, settings, book_dir=root / "book", only=only, execute=execute,
                                      extra=extra, on_result=on_result, on_start=on_start, keep_failed=keep_going,
                                      expected=expected)
    report.execute_seconds = time.perf_counter() - start
    if html and (keep_going or not report.failures):
        start = time.perf_counter()
        def run_pages(html_dir: Path) -> None:  # written into the new site before it replaces the old one
            pages_start = time.perf_counter()
            data_root = settings.data_root if settings.data_root.is_dir() else None
            report.run_pages = len(runpages.write_run_pages(settings.results_root, profile, html_dir,
                                                            data_root=data_root))
            report.run_pages_seconds = time.perf_counter() - pages_start

        try:
            report.html_dir = str(build_html(root, keep_going=keep_going, finish=run_pages))
        except BookBuildError as exc:
            report.html_seconds = time.perf_counter() - start
            report.html_error = str(exc)
            exc.report = report
            if execute:
                write_json(report_path, report.to_dict())
            raise
        report.html_seconds = time.perf_counter() - start - report.run_pages_seconds
    if execute:
        write_json(report_path, report.to_dict())
    return report
