"""Shared test fixtures: the test suite's boundary, where settings are built (never in the library).

Real-data tests use the ``data_root`` fixture: it skips with a clear reason when ``../shared/data`` (or
``$MEDIBIO_DATA``) is absent, but *fails* when ``MEDIBIO_REQUIRE_DATA=1`` (set by ``.ci/run``), so CI can
never pass by silently skipping them. ``settings`` gives a test its own results folder beside the real data
root (when there is one) and the session's cache; tests that need other folders build ``Settings`` themselves.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from unittest import mock

import pytest

from medibio.core import progress
from medibio.core.paths import has_data_root
from medibio.core.settings import Settings

FIXTURES = Path(__file__).parent / "fixtures"


# Modules whose fixtures build for minutes (a book, a packed GPU check), longest first: they start first, so that
# under `pytest -n 2 --dist loadfile --no-loadscope-reorder` (make test) the two workers share them rather than
# one of them finishing the longest alone at the end.
FIRST = ("test_gpu_profile_limited.py", "test_notebooks.py", "test_book_model.py", "test_gpu_check.py",
         "test_book_browser.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that asks for the real data root is a ``realdata`` test (the fast tier leaves those out); the
    modules of :data:`FIRST` run first (a stable sort: the order is otherwise the collection's)."""
    for item in items:
        if "data_root" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.realdata)
    items.sort(key=lambda item: FIRST.index(item.path.name) if item.path.name in FIRST else len(FIRST))


def require_data() -> bool:
    return os.environ.get("MEDIBIO_REQUIRE_DATA", "") not in ("", "0", "false", "False")


@pytest.fixture(autouse=True)
def _restore_environment():
    """The CLI sets ``MEDIBIO_LIMIT`` and friends for the processes it starts; run in-process by a test, that
    must not reach the tests after it (a leaked limit once cut later runs' data and steps)."""
    with mock.patch.dict(os.environ):
        yield


@pytest.fixture(scope="session")
def session_settings() -> Settings:
    """The settings this test session was started with (``MEDIBIO_*`` or the defaults), progress off."""
    made = Settings.from_env(progress=False)
    progress.configure(False)
    return made


@pytest.fixture(scope="session")
def data_root(session_settings: Settings) -> Path:
    """The real data root, or skip (fail under MEDIBIO_REQUIRE_DATA=1) when it is absent."""
    if not has_data_root(session_settings.data_root):
        reason = "real data root absent: set MEDIBIO_DATA or place the data at ../shared/data"
        if require_data():
            pytest.fail(reason + " (MEDIBIO_REQUIRE_DATA=1 forbids skipping)")
        pytest.skip(reason)
    return session_settings.data_root.resolve()


@pytest.fixture(scope="session")
def shared_tmp(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    """A temporary folder every process of this test session sees: under ``pytest -n`` (xdist) the workers'
    common parent, else the session's own; for what is built once and read by tests in several modules."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if worker_id != "master" else base


@pytest.fixture(scope="session")
def smoke(shared_tmp: Path, data_root: Path, session_settings: Settings) -> dict:
    """The smoke book (every chapter executed, the HTML built), once per session: the first process that asks
    builds it under a file lock, the others wait and read its report."""
    from filelock import FileLock

    from tests.support import book

    base = shared_tmp / "smoke-book"
    with FileLock(str(shared_tmp / "smoke-book.lock")):
        return book.smoke_book(base, session_settings)


@pytest.fixture()
def settings(session_settings: Settings, tmp_path: Path) -> Settings:
    """This test's settings: its own results folder; the session's data root and cache."""
    return session_settings.replace(results_root=tmp_path / "results")


@pytest.fixture()
def fixtures_dir() -> Path:
    return FIXTURES


class HandRuns:
    """Run records with test predictions on a hand-made BioASQ test split (yes/no questions ``q0..q{n-1}``,
    gold answers alternating yes/no), written without training: tables, significance tests and the book's
    result functions can then be checked against numbers worked out by hand."""

    MODEL = {"name": "minilm", "path": "/m", "tag": "minilm", "hash": "sha256:0", "model_type": "bert",
             "parameters": 1}

    def __init__(self, base: Path, n: int = 40) -> None:
        self.data = base / "data"
        self.results = base / "results"
        self.gold = ["yes" if i % 2 == 0 else "no" for i in range(n)]
        folder = self.data / "blurb" / "BioASQ"
        folder.mkdir(parents=True)
        folder.joinpath("test.tsv").write_text("".join(f"q{i}\tIs it?\tSome context.\t{g}\n"
                                                       for i, g in enumerate(self.gold)))

    def answers(self, wrong: set[int] | range) -> list[str]:
        """The gold answers with the questions in ``wrong`` answered wrongly."""
        return [("no" if g == "yes" else "yes") if i in wrong else g for i, g in enumerate(self.gold)]

    def write(self, variant: str, seed: int, wrong: set[int] | range = frozenset(), *, root: Path | None = None,
              answers: list[str] | None = None, ids: list[str] | None = None, profile: str = "cpu",
              digest: str = "5eed5eed5eed", score_dev: float | None = None, commit: str = "c0ffee" * 6 + "abcd",
              device: str = "cpu", intermediate: list[str] | None = None):
        """Write one run's predictions and record (score = accuracy of ``answers``) and return the record."""
        from medibio.runs import records
        from medibio.runs.identity import RunKey

        root = root or self.results
        answers = answers if answers is not None else self.answers(wrong)
        ids = ids if ids is not None else [f"q{i}" for i in range(len(answers))]
        path = RunKey("finetune", profile, "minilm", variant, "BioASQ", seed, digest).predictions_path(root)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps({"id": i, "prediction": a}) + "\n"
                                for i, a in zip(ids, answers, strict=True)))
        score = 100 * sum(a == self.gold[int(i[1:])] for a, i in zip(answers, ids, strict=True)) / len(answers)
        record = records.RunRecord(dataset="BioASQ", model=self.MODEL, profile=profile, seed=seed, variant=variant,
                                   predictions=path.name, score_test=score, score_dev=score_dev,
                                   config_digest=digest, environment={"git_commit": commit, "device": device},
                                   details={"intermediate": list(intermediate or [])})
        records.write_record(record, root)
        return record


@pytest.fixture()
def hand_runs(tmp_path: Path) -> HandRuns:
    return HandRuns(tmp_path)
