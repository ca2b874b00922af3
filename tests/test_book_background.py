"""The book's background process for the frozen-encoder baselines: when it runs, what it runs, how it ends."""

from __future__ import annotations

import os
import sys
import time

import pytest

from medibio import cores
from medibio.book import background, build, chapters


def _entries(*parts: str):
    return [chapters.get(p) for p in parts]


def test_it_runs_only_when_an_executed_chapter_shows_baselines_on_a_profile_that_asks():
    assert background.wanted("gpu", _entries("tables_5_6"), execute=True)
    assert background.wanted("paper", _entries("table_7", "audit"), execute=True)
    assert not background.wanted("gpu", _entries("audit", "scierc"), execute=True)
    assert not background.wanted("gpu", _entries("tables_5_6"), execute=False)
    assert not background.wanted("smoke", _entries("tables_5_6"), execute=True)  # the smoke book tests chapters
    # on the 2-core CPU too: the chapters give the process one of the two cores while it runs (medibio.cores)
    assert background.wanted("cpu", _entries("tables_5_6"), execute=True)


def test_command_asks_for_the_book_plans_tasks_with_the_profile(tmp_path):
    cmd = background.command("cpu", tmp_path / "results", tmp_path / "data")
    assert cmd[:3] == [sys.executable, "-m", "medibio.book.background"]
    assert cmd[cmd.index("--profile") + 1] == "cpu"
    assert background.frozen_tasks("cpu") == ["all", "BIOSSES", "BioASQ"]
    assert cmd[cmd.index("--results-root") + 1] == str(tmp_path / "results")
    assert cmd[cmd.index("--data-root") + 1] == str(tmp_path / "data") and "--finetune" not in cmd
    assert "--data-root" not in background.command("cpu", tmp_path, None)
    assert background.command("cpu", tmp_path, None, finetune=True)[-1] == "--finetune"
    assert background.CHILD_ENV["OMP_NUM_THREADS"] == "1"


def test_it_helps_the_fine_tuning_chapter_only_on_cpu_and_only_when_that_chapter_runs():
    assert background.helps_finetune("cpu", _entries("scierc", "tables_5_6"))
    assert not background.helps_finetune("cpu", _entries("scierc", "table_7"))
    assert not background.helps_finetune("gpu", _entries("tables_5_6"))  # there the GPU trains, one run at a time


def test_the_process_computes_the_baselines_then_helps(monkeypatch, tmp_path):
    from medibio.blurb import frozen
    from medibio.finetune import runner

    calls: list[tuple] = []
    monkeypatch.setattr(frozen, "baselines", lambda profile, tasks, **kw: calls.append(("frozen", profile, tasks)))
    monkeypatch.setattr(runner, "help_finetune", lambda tasks, **kw: calls.append(("help", kw["profile"], tasks)))
    background.main(["--profile", "cpu", "--results-root", str(tmp_path)])
    assert calls == [("frozen", "cpu", ["all", "BIOSSES", "BioASQ"])]
    calls.clear()
    background.main(["--profile", "cpu", "--results-root", str(tmp_path), "--finetune"])
    assert calls == [("frozen", "cpu", ["all", "BIOSSES", "BioASQ"]), ("help", "cpu", ["all"])]


def _fake(monkeypatch, script: str) -> None:
    monkeypatch.setattr(background, "command", lambda *a: [sys.executable, "-c", script])


def test_a_finished_process_is_waited_for_and_reported(monkeypatch, tmp_path):
    _fake(monkeypatch, "import os, time; time.sleep(0.5); print('threads', os.environ['OMP_NUM_THREADS'])")
    said: list[str] = []
    log = tmp_path / "book" / "bg.log"
    with background.beside_chapters("cpu", tmp_path, None, log, say=said.append) as proc:
        assert proc.poll() is None  # the chapters run while it works
        # chapters started now (kernels inherit the environment) leave the process a core while it runs
        assert os.environ[cores.ENV] == str(proc.pid) and cores.sharing_with() == proc.pid
    assert proc.returncode == 0 and "threads 1" in log.read_text()
    assert cores.ENV not in os.environ  # not after the block
    assert said[0].startswith("… frozen-encoder baselines") and said[-1].startswith("✓ frozen-encoder baselines")


def test_a_failing_process_is_reported_but_does_not_fail_the_build(monkeypatch, tmp_path):
    _fake(monkeypatch, "import sys; print('boom'); sys.exit(3)")
    said: list[str] = []
    with background.beside_chapters("cpu", tmp_path, None, tmp_path / "bg.log", say=said.append):
        pass
    assert "exited with 3" in said[-1] and "boom" in (tmp_path / "bg.log").read_text()


def test_an_interrupted_build_stops_the_process(monkeypatch, tmp_path):
    _fake(monkeypatch, "import time; time.sleep(60)")
    started = time.perf_counter()
    log = tmp_path / "bg.log"
    with pytest.raises(KeyboardInterrupt), background.beside_chapters("cpu", tmp_path, None, log,
                                                                      say=lambda _: None) as proc:
        raise KeyboardInterrupt
    assert proc.returncode is not None and time.perf_counter() - started < 30


def test_build_book_runs_it_around_the_chapters(monkeypatch, tmp_path):
    """build_book starts the background work before the first chapter and waits for it after the last."""
    events: list[str] = []

    class Recorder:
        def __init__(self, *args, **kwargs) -> None:
            events.append("start")

        def __enter__(self):
            return None

        def __exit__(self, *exc) -> None:
            events.append("end")

    monkeypatch.setattr(background, "beside_chapters", Recorder)
    monkeypatch.setattr(build, "execute_all", lambda *a, **k: events.append("chapters") or [])
    build.build_book("gpu", root=tmp_path, only=["tables_5_6"], html=False, results_root_dir=tmp_path / "r")
    assert events == ["start", "chapters", "end"]
    events.clear()
    build.build_book("gpu", root=tmp_path, only=["audit"], html=False, results_root_dir=tmp_path / "r")
    assert events == ["chapters"]
