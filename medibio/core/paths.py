"""Default locations of data, results and caches, and the resolution of a given location.

The functions here take what the caller passes and fall back to fixed defaults; they never read the
environment. ``MEDIBIO_DATA`` and its siblings are read once, at a boundary, by
:meth:`medibio.core.settings.Settings.from_env`, which passes the resolved folders down.
The data root is read in place, never copied into the repository.
"""

from __future__ import annotations

import os
from pathlib import Path

from medibio.core.errors import DataMissingError, NotAFileError

REPO_ROOT = Path(__file__).resolve().parent.parent.parent


def _candidates() -> list[Path]:
    return [REPO_ROOT.parent / "shared" / "data", Path.cwd().parent / "shared" / "data", Path.cwd() / "data"]


def default_data_root() -> Path:
    """``../shared/data`` beside the checkout (or beside the working directory) when it exists."""
    return next((c for c in _candidates() if c.is_dir()), _candidates()[0])


def default_results_root() -> Path:
    return REPO_ROOT / "results"


def default_cache_root() -> Path:
    return REPO_ROOT / ".cache" / "medibio"


def data_root(override: str | Path | None = None, must_exist: bool = True) -> Path:
    """The data root: ``override``, else :func:`default_data_root`; a missing folder says how to get one, a
    file or a broken link in its place is said to be one."""
    root = Path(override).expanduser() if override not in (None, "") else default_data_root()
    if must_exist and not root.is_dir() and os.path.lexists(root):  # there is something, and it is no folder
        broken = root.is_symlink() and not root.exists()
        raise NotAFileError(root, f"a broken symbolic link to {os.readlink(root)}" if broken else "a file",
                            expected="a folder (the data root)")
    if must_exist and not root.is_dir():
        raise DataMissingError(
            root,
            "set MEDIBIO_DATA (or --data-root) to a folder holding the BLURB data (blurb/, ift/, s2orc/, "
            "corpora/ ...), or run `medibio data fetch --root DIR` on a machine with internet",
        )
    return root.resolve() if root.exists() else root


def has_data_root(root: str | Path | None = None) -> bool:
    """True when a data root with the BLURB folder is available (tests skip real-data cases otherwise)."""
    try:
        return (data_root(root) / "blurb").is_dir()
    except (DataMissingError, NotAFileError):  # nothing there, or a file or broken link in its place
        return False


def results_root(override: str | Path | None = None) -> Path:
    """Run records and predictions: ``override``, else ``results/`` in the repository."""
    return Path(override).expanduser() if override not in (None, "") else default_results_root()


def cache_root(override: str | Path | None = None) -> Path:
    """Derived artefacts (tiny models, tokenized corpora): ``override``, else ``.cache/medibio``; created."""
    path = Path(override).expanduser() if override not in (None, "") else default_cache_root()
    path.mkdir(parents=True, exist_ok=True)
    return path
