"""The book's background process for the frozen-encoder baselines: when it runs, what it runs, how it ends."""

from __future__ import annotations

import sys
import time

import pytest

from medibio.book import background, build, chapters
from medibio.core.settings import Settings, alive


def _entries(*parts: str):
    return [chapters.get(p) for p in parts]


def test_it_runs_only_when_an_executed_chapter_shows_baselines_on_a_profile_that_asks():
    assert background.wanted("gpu", _entries("tables_5_6"), execute=True)
    assert background.wanted("paper", _entries("table_7", "audit"), execute=True)
    assert not background.wanted("gpu", _entries("audit", "scierc"), execute=True)
    assert not background.wanted("gpu", _entries("tables_5_6"), execute=False)
    assert not background.wanted("smoke", _entries("tables_5_6"), execute=True)  # the smoke book tests chapters
    # on the 2-core CPU too: the chapters give the process one of the two cores while it runs
    # (Settings.share_cores_with, Settings.run_threads)
    assert background.wanted("cpu", _entries("tables_5_6"), execute=True)


def test_command_asks_for_the_book_plans_tasks_with_the_profile(tmp_path):
    """The command names the profile; the folders travel in the child's settings (its environment)."""
    cmd = background.command("cpu")
    assert cmd[:3] == [sys.executable, "-m", "medibio.book.background"]
    assert cmd[cmd.index("--profile") + 1] == "cpu" and "--chapters" not in cmd
    assert background.frozen_tasks("cpu") == ["all", "BIOSSES", "BioASQ"]
    assert background.command("cpu", ["tables_5_6_pretraining_configurations", "tables_1_2_intermediate_finetuning"])[
        -2:] == ["--chapters", "tables_5_6_pretraining_configurations,tables_1_2_intermediate_finetuning"]
    assert background.CHILD_ENV["OMP_NUM_THREADS"] == "1"


def test_it_helps_the_fine_tuning_chapters_only_on_cpu_and_only_when_they_run():
    assert background.trains_ahead("cpu", _entries("scierc", "tables_5_6")) == [background.FINETUNES[0]]
    assert background.trains_ahead("cpu", _entries("tables_1_2", "tables_5_6")) == list(background.FINETUNES)
    assert background.trains_ahead("cpu", _entries("scierc", "table_7")) == []
    assert background.trains_ahead("gpu", _entries("tables_5_6")) == []  # there the GPU trains, one run at a time


def test_the_process_computes_the_baselines_then_helps(monkeypatch, tmp_path):
    """The process reads its settings from the environment the build gave it (its boundary)."""
    from medibio.baselines import frozen

    calls: list[tuple] = []
    monkeypatch.setattr(frozen, "baselines", lambda profile, tasks, **kw: calls.append(
        ("frozen", profile, tasks, kw["settings"].results_root, *([kw["model"]] if kw.get("model") else []))))
    monkeypatch.setattr(background, "chapter_runs", lambda profile, chapters, settings, model=None: [
        profile, *chapters, *([model] if model else [])])
    monkeypatch.setattr(background, "train_ahead", lambda plans, settings: calls.append(
        ("help", plans, settings.results_root)))
    monkeypatch.setenv("MEDIBIO_RESULTS", str(tmp_path))
    background.main(["--profile", "cpu"])
    assert calls == [("frozen", "cpu", ["all", "BIOSSES", "BioASQ"], tmp_path)]
    calls.clear()
    background.main(["--profile", "cpu", "--chapters", "tables_5_6_pretraining_configurations"])
    assert calls == [("frozen", "cpu", ["all", "BIOSSES", "BioASQ"], tmp_path),
                     ("help", ["cpu", "tables_5_6_pretraining_configurations"], tmp_path)]
    calls.clear()  # a book built for another model (medibio book --model): baselines and runs of that model
    background.main(["--profile", "cpu", "--model", "tiny-deberta", "--chapters",
                     "tables_5_6_pretraining_configurations"])
    assert calls == [("frozen", "cpu", ["all", "BIOSSES", "BioASQ"], tmp_path, "tiny-deberta"),
                     ("help", ["cpu", "tables_5_6_pretraining_configurations", "tiny-deberta"], tmp_path)]


def _fake(monkeypatch, script: str) -> None:
    monkeypatch.setattr(background, "command", lambda *a: [sys.executable, "-c", script])


def test_a_finished_process_is_waited_for_and_reported(monkeypatch, tmp_path):
    _fake(monkeypatch, "import os, time; time.sleep(1); print('threads', os.environ['OMP_NUM_THREADS'], "
                       "'results', os.environ['MEDIBIO_RESULTS'], 'progress', os.environ['MEDIBIO_PROGRESS'])")
    said: list[str] = []
    log = tmp_path / "book" / "bg.log"
    settings = Settings(results_root=tmp_path / "r")
    with background.beside_chapters("cpu", settings, log, say=said.append) as chapters_settings:
        pid = chapters_settings.share_cores_with
        assert pid is not None and alive(pid)  # the chapters run while it works
        # chapters started now get settings that leave the process a core while it runs
        assert chapters_settings.run_threads() is not None and chapters_settings.results_root == tmp_path / "r"
    assert not alive(pid) and chapters_settings.run_threads() is None  # once it ended, they take it back
    assert f"threads 1 results {tmp_path / 'r'} progress 0" in log.read_text()
    assert said[0].startswith("… frozen-encoder baselines") and said[-1].startswith("✓ frozen-encoder baselines")


def test_a_failing_process_is_reported_but_does_not_fail_the_build(monkeypatch, tmp_path):
    _fake(monkeypatch, "import sys; print('boom'); sys.exit(3)")
    said: list[str] = []
    with background.beside_chapters("cpu", Settings(results_root=tmp_path), tmp_path / "bg.log", say=said.append):
        pass
    assert "exited with 3" in said[-1] and "boom" in (tmp_path / "bg.log").read_text()


def test_an_interrupted_build_stops_the_process(monkeypatch, tmp_path):
    _fake(monkeypatch, "import time; time.sleep(60)")
    started = time.perf_counter()
    log = tmp_path / "bg.log"
    with pytest.raises(KeyboardInterrupt), background.beside_chapters(
            "cpu", Settings(results_root=tmp_path), log, say=lambda _: None) as chapters_settings:
        raise KeyboardInterrupt
    assert not alive(chapters_settings.share_cores_with) and time.perf_counter() - started < 30


def test_build_book_runs_it_around_the_chapters(monkeypatch, tmp_path):
    """build_book starts the background work before the first chapter and waits for it after the last."""
    events: list[str] = []

    class Recorder:
        def __init__(self, profile, settings, *args, **kwargs) -> None:
            self.settings = settings
            events.append("start")

        def __enter__(self):
            return self.settings

        def __exit__(self, *exc) -> None:
            events.append("end")

    monkeypatch.setattr(background, "beside_chapters", Recorder)
    monkeypatch.setattr(build, "execute_all", lambda *a, **k: events.append("chapters") or [])
    settings = Settings(results_root=tmp_path / "r")
    build.build_book("gpu", settings, root=tmp_path, only=["tables_5_6"], html=False)
    assert events == ["start", "chapters", "end"]
    events.clear()
    build.build_book("gpu", settings, root=tmp_path, only=["audit"], html=False)
    assert events == ["chapters"]
