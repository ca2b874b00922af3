"""The rich console every CLI table prints to.

rich wraps to 80 columns when stdout is not a terminal (a pipe, a log file, CI), which folds the tables
into unreadable cells; outside a terminal we print at a fixed, wider width instead.
"""

from __future__ import annotations

import sys

from rich.console import Console

PIPE_WIDTH = 160


def console() -> Console:
    """A console at the terminal's width, or ``PIPE_WIDTH`` columns when output is redirected."""
    return Console() if sys.stdout.isatty() else Console(width=PIPE_WIDTH)
