"""Shared test fixtures.

Real-data tests use the ``data_root`` fixture: it skips with a clear reason when ``../shared/data`` (or
``$MEDIBIO_DATA``) is absent, but *fails* when ``MEDIBIO_REQUIRE_DATA=1`` (set by ``.ci/run``), so CI can
never pass by silently skipping them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from medibio.paths import data_root as _data_root
from medibio.paths import has_data_root

FIXTURES = Path(__file__).parent / "fixtures"


def require_data() -> bool:
    return os.environ.get("MEDIBIO_REQUIRE_DATA", "") not in ("", "0", "false", "False")


@pytest.fixture(scope="session")
def data_root() -> Path:
    """The real data root, or skip (fail under MEDIBIO_REQUIRE_DATA=1) when it is absent."""
    if not has_data_root():
        reason = "real data root absent: set MEDIBIO_DATA or place the data at ../shared/data"
        if require_data():
            pytest.fail(reason + " (MEDIBIO_REQUIRE_DATA=1 forbids skipping)")
        pytest.skip(reason)
    return _data_root()


@pytest.fixture()
def fixtures_dir() -> Path:
    return FIXTURES
