"""CLI commands of medibio.blurb (registered on the main app by medibio.cli)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add this area's commands to the main medibio app."""
