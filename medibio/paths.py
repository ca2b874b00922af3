"""Where data, results and caches live; every location is configurable by environment variable.

The data root is read in place (never copied into the repository): ``MEDIBIO_DATA`` if set, else
``../shared/data`` next to the repository checkout or the current directory when it exists.
"""

from __future__ import annotations

import os
from pathlib import Path

from medibio.errors import DataMissingError

REPO_ROOT = Path(__file__).resolve().parent.parent

DATA_ENV = "MEDIBIO_DATA"
RESULTS_ENV = "MEDIBIO_RESULTS"
CACHE_ENV = "MEDIBIO_CACHE"


def _candidates() -> list[Path]:
    return [REPO_ROOT.parent / "shared" / "data", Path.cwd().parent / "shared" / "data", Path.cwd() / "data"]


def data_root(override: str | Path | None = None, must_exist: bool = True) -> Path:
    """Resolve the data root: explicit argument, then ``$MEDIBIO_DATA``, then ``../shared/data``."""
    if override is not None and str(override) != "":
        root = Path(override).expanduser()
    elif os.environ.get(DATA_ENV):
        root = Path(os.environ[DATA_ENV]).expanduser()
    else:
        root = next((c for c in _candidates() if c.is_dir()), _candidates()[0])
    if must_exist and not root.is_dir():
        raise DataMissingError(
            root,
            f"set {DATA_ENV} to a folder holding the BLURB data (blurb/, ift/, s2orc/, corpora/ ...), "
            "or run `medibio data fetch --root DIR` on a machine with internet",
        )
    return root.resolve() if root.exists() else root


def has_data_root() -> bool:
    """True when a data root with the BLURB folder is available (tests skip real-data cases otherwise)."""
    try:
        return (data_root() / "blurb").is_dir()
    except DataMissingError:
        return False


def results_root(override: str | Path | None = None) -> Path:
    """Run records and predictions: argument, ``$MEDIBIO_RESULTS``, else ``results/`` in the repository."""
    if override is not None and str(override) != "":
        return Path(override).expanduser()
    return Path(os.environ.get(RESULTS_ENV, REPO_ROOT / "results")).expanduser()


def cache_root(override: str | Path | None = None) -> Path:
    """Derived artefacts (tiny models, vocabularies, tokenized caches): ``$MEDIBIO_CACHE`` or ``.cache/``."""
    if override is not None and str(override) != "":
        path = Path(override).expanduser()
    else:
        path = Path(os.environ.get(CACHE_ENV, REPO_ROOT / ".cache" / "medibio")).expanduser()
    path.mkdir(parents=True, exist_ok=True)
    return path
