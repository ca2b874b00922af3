"""Folders that are no results root, for the tests of the commands that must refuse them in one line."""

from __future__ import annotations

from pathlib import Path


def not_a_results_root(base: Path, make: str) -> Path:
    """A folder under ``base`` that holds no run record, made as ``make`` says: ``missing``, ``file``, ``empty``,
    ``kind folder`` (a results root's ``finetune/`` itself) or ``data root`` (a folder with ``blurb/``)."""
    target = base / "x"
    if make == "file":
        target.write_text("")
    elif make == "empty":
        target.mkdir()
    elif make == "kind folder":
        (target / "finetune").mkdir(parents=True)
        target = target / "finetune"
    elif make == "data root":
        (target / "blurb").mkdir(parents=True)
    return target
