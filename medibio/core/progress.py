"""Live progress of long work (training, evaluation, embedding), shown where the person waiting is looking.

Three places, one API (:func:`bar` for a step counter with an estimate of the time left, :func:`say` for a
line that stays):

* a terminal: ``medibio finetune`` and the other commands write to stderr;
* the terminal that started a Jupyter kernel: a chapter executed by ``medibio book`` or ``papermill`` runs in
  a kernel whose cell outputs become the rendered page, so progress goes to the *launcher's* terminal (the
  kernel's original stderr), never into the page;
* a notebook cell, for people in JupyterLab: :class:`CellStatus` (used by ``chapter.quiet()``) shows the
  current bar and the finished runs in the cell while it runs, and leaves one summary line behind.

A session with ``progress`` off (``MEDIBIO_PROGRESS=0``: tests, logs that must stay small) writes nothing to
the terminal; its boundary calls :func:`configure`.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import time
from collections.abc import Callable, Iterator
from typing import IO, Any

from tqdm import tqdm

from medibio.core import console

Sink = Callable[[str, dict[str, Any]], None]  # sink(kind, info); kinds: "bar", "line", "run"
_SINKS: list[Sink] = []
_TERMINAL: IO[str] | None = None
FALLBACK_SIZE = (100, 40)  # (columns, rows) of a terminal that reports no size


_ENABLED = {"terminal": True}


def configure(enabled: bool) -> None:
    """Whether progress reaches the terminal in this process (a boundary decides, from its settings)."""
    _ENABLED["terminal"] = enabled


def enabled() -> bool:
    return _ENABLED["terminal"]


def terminal() -> IO[str]:
    """The stream of whoever started this process: stderr, or in a Jupyter kernel the launcher's terminal.

    ipykernel forwards the process's stderr into cell outputs (and echoes it to the original descriptor,
    which it keeps as ``_original_stdstream_copy``); writing to that copy reaches the terminal only. In a
    kernel the answer is pinned the first time (``medibio.book.notebook.setup`` asks early), so that a
    later ``redirect_stderr`` around long work does not swallow the progress.
    """
    global _TERMINAL
    if _TERMINAL is not None:
        return _TERMINAL
    err = sys.stderr
    copy = getattr(err, "_original_stdstream_copy", None)
    if copy is not None:
        _TERMINAL = io.TextIOWrapper(os.fdopen(os.dup(copy), "wb", buffering=0), encoding="utf-8",
                                     line_buffering=True, write_through=True)
    elif "ipykernel" in sys.modules:
        _TERMINAL = sys.__stderr__  # kernel without fd capture: fd 2 is the launcher's terminal
    else:
        return err  # a plain process: follow redirections of sys.stderr
    return _TERMINAL


def _is_tty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _emit(kind: str, info: dict[str, Any]) -> None:
    for sink in list(_SINKS):
        sink(kind, info)


class _Bar(tqdm):
    """tqdm on the launcher's terminal that also tells the cell sinks how far it got (every 2 s at most),
    with its own count and clock so that a bar hidden from the terminal still reports to the cell."""

    def __init__(self, *args: Any, cell: bool = True, **kwargs: Any) -> None:
        self._label, self._of, self._cell = kwargs.get("desc", ""), kwargs.get("total"), cell
        self._done, self._since, self._last_emit, self._note = 0, time.monotonic(), 0.0, ""
        super().__init__(*args, **kwargs)

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        self._note = s
        if not self.disable:
            super().set_postfix_str(s, refresh=refresh)

    def update(self, n: float | None = 1) -> bool | None:
        out = super().update(n)
        self._done += n or 0
        now = time.monotonic()
        if self._cell and _SINKS and (now - self._last_emit >= 2.0 or self._done >= (self._of or 0)):
            self._last_emit = now
            rate = self._done / max(now - self._since, 1e-9)
            left = (self._of - self._done) / rate if rate and self._of else None
            _emit("bar", {"desc": self._label, "n": self._done, "total": self._of, "postfix": self._note,
                          "left_s": left})
        return out


def bar(desc: str, total: int, unit: str = "step", leave: bool = False, disable: bool = False,
        minor: bool = False) -> tqdm:
    """A progress bar with rate and time left, on the terminal (see :func:`terminal`) and in cell sinks
    (``disable``: on processes other than the main one). ``minor`` bars (an evaluation pass inside a
    training run) are drawn on a terminal only, not into a log file, where nested bars become noise."""
    stream = terminal()
    tty = _is_tty(stream)
    off = disable or not enabled() or (minor and not tty)
    # a pseudo-terminal that reports no size (script, some CI runners) has 0 rows, and tqdm hides every bar
    # below the last row: give such a terminal a fixed size
    sized = tty and _columns(stream) > 0
    fixed = tty and not sized
    return _Bar(total=total, desc=desc, unit=unit, leave=leave, file=stream, disable=off, cell=not minor,
                mininterval=0.5 if tty else 30.0, ascii=not tty, dynamic_ncols=sized,
                ncols=FALLBACK_SIZE[0] if fixed else None, nrows=FALLBACK_SIZE[1] if fixed else None)


def _columns(stream: IO[str]) -> int:
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return 0


def say(line: str, kind: str = "line", **info: Any) -> None:
    """A line that stays (a finished run with its score, a chapter starting): terminal and cell sinks."""
    if enabled():
        stream = terminal()  # bold and colour on a terminal only: a log file gets plain text
        tqdm.write(line if console.colours(stream) else console.plain(line), file=stream)
    _emit(kind, {"text": line, **info})


@contextlib.contextmanager
def sink(fn: Sink) -> Iterator[None]:
    """Send progress events to ``fn`` while the block runs."""
    _SINKS.append(fn)
    try:
        yield
    finally:
        _SINKS.remove(fn)


def clock(seconds: float | None) -> str:
    """``m:ss``, or ``h:mm:ss`` from an hour on (``?`` for no time)."""
    if seconds is None:
        return "?"
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}" if seconds >= 3600 else \
        f"{seconds // 60}:{seconds % 60:02d}"


class CellStatus:
    """A status line in the running notebook cell: the current bar and the last finished runs while work
    goes on, one summary line ("19 runs: 13 trained now in 34 min, 6 reused") when it is done."""

    def __init__(self, title: str) -> None:
        self.title = title
        self.lines: list[str] = []
        self.current = ""
        self.trained = 0
        self.reused = 0
        self.train_seconds = 0.0
        self.handle: Any = None
        self.started = time.monotonic()

    def __call__(self, kind: str, info: dict[str, Any]) -> None:
        if kind == "bar":
            postfix = f" ({info['postfix']})" if info.get("postfix") else ""
            self.current = (f"{info['desc']}{postfix}: {int(info['n'])}/{info['total']}, "
                            f"{clock(info.get('left_s'))} left")
        elif kind == "run":
            self.lines.append(info["text"])
            if info.get("reused"):
                self.reused += 1
            else:
                self.trained += 1
                self.train_seconds += info.get("seconds") or 0.0
        else:
            self.lines.append(info["text"])
        self._show("\n".join([*self.lines[-8:], self.current]))

    def _show(self, text: str) -> None:
        try:
            from IPython.display import display
        except ImportError:
            return
        payload = {"text/plain": f"[{self.title}] {text}"}
        if self.handle is None:
            self.handle = display(payload, raw=True, display_id=True)
        else:
            self.handle.update(payload, raw=True)

    def summary(self) -> str:
        runs = self.trained + self.reused
        if not runs:
            return f"{self.title}: done in {clock(time.monotonic() - self.started)}"
        return (f"{self.title}: {runs} run{'s' if runs != 1 else ''} — {self.trained} trained now "
                f"({clock(self.train_seconds)}), {self.reused} reused from their records")

    def finish(self) -> None:
        if self.handle is not None or self.trained or self.reused:
            self.lines, self.current = [], ""
            self._show(self.summary().removeprefix(f"{self.title}: "))


class Countdown:
    """One overall time left for work done in named stages whose times were estimated up front (a book's
    chapters): the stages not finished yet, at the pace the finished ones kept against their estimates, once
    those were expected to take a minute and a tenth of the whole (before that, one short stage would set the
    pace of all; the estimates stand as they are)."""

    def __init__(self, estimates: dict[str, float], clock: Callable[[], float] = time.monotonic) -> None:
        self.estimates = dict(estimates)
        self.finished: set[str] = set()
        self.clock = clock
        self.started = clock()

    def finish(self, stage: str) -> None:
        self.finished.add(stage)

    def pace(self) -> float:
        """Time taken so far over the time the finished stages were expected to take (1 until that is a minute
        and a tenth of the whole)."""
        expected = sum(s for name, s in self.estimates.items() if name in self.finished)
        enough = max(60.0, 0.1 * sum(self.estimates.values()))
        return (self.clock() - self.started) / expected if expected >= enough else 1.0

    def left(self) -> float:
        pace = self.pace()
        return sum(s for name, s in self.estimates.items() if name not in self.finished) * pace

    def line(self) -> str:
        """``about 23:10 left (done at 09:41 UTC)``: what the progress line shows."""
        left = self.left()
        done = time.gmtime(time.time() + left)
        return f"about {clock(left)} left (done at {done.tm_hour:02d}:{done.tm_min:02d} UTC)"
