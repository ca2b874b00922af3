"""The rich console every CLI table prints to, and colour only where someone sees it.

rich wraps to 80 columns when stdout is not a terminal (a pipe, a log file, CI), which folds the tables
into unreadable cells; outside a terminal we print at a fixed, wider width instead.

Everything a table shows can come from a file or a path (a data file's label, a line number, a folder
name): the console reads no markup and no emoji codes (``[red]``, ``:100:``, ``1[/i]`` print as they are,
never as formatting or a crash), and what is meant to be coloured is a :func:`styled` :class:`rich.text.Text`.
Colour and bold reach a terminal only: a log written to a file gets no ANSI codes (:func:`style`,
:func:`plain`).
"""

from __future__ import annotations

import re
import sys
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:  # rich is imported when a table is printed, not by every command (progress imports this)
    from rich.console import Console
    from rich.text import Text

PIPE_WIDTH = 160
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def console() -> Console:
    """A console at the terminal's width, or ``PIPE_WIDTH`` columns when output is redirected; no markup,
    emoji codes or highlighting of its text."""
    from rich.console import Console

    options: dict[str, Any] = {"markup": False, "emoji": False, "highlight": False}
    return Console(**options) if sys.stdout.isatty() else Console(width=PIPE_WIDTH, **options)


def styled(text: str, style: str) -> Text:
    """``text`` in a rich ``style`` ("bold red"), taken literally: a table cell meant to be coloured."""
    from rich.text import Text

    return Text(text, style=style)


def colours(stream: IO[str] | None = None) -> bool:
    """Whether ``stream`` (stderr by default) is a terminal, which alone gets colour."""
    stream = sys.stderr if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def style(text: str, stream: IO[str] | None = None, **how: Any) -> str:
    """``typer.style(text, **how)`` when ``stream`` is a terminal, else ``text`` as it is."""
    import typer

    return typer.style(text, **how) if colours(stream) else text


def plain(text: str) -> str:
    """``text`` without ANSI escape codes (for a log file)."""
    return _ANSI.sub("", text)
