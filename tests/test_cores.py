"""A chapter gives up a core while the build's background process runs, and takes it back when it ends.

The settings name that process (``Settings.share_cores_with``, from ``$MEDIBIO_SHARE_CORES_WITH`` at a
boundary); :meth:`Settings.run_threads` says how many CPU threads a run starting now may use, and the run
protocol (:func:`medibio.runs.protocol.run`) runs every run with ``min(torch threads, run_threads())``
threads to its end and records the count (``cpu_threads``).
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import subprocess
import sys

import pytest
import torch

from medibio.core.settings import SHARE_ENV, Settings, alive
from medibio.runs import protocol, records
from tests.support.runs import NotingKind

_SEEDS = itertools.count(1)


@pytest.fixture(autouse=True)
def _fresh_state():
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


@pytest.fixture()
def settings(settings: Settings) -> Settings:
    """This test's settings, sharing the cores with no process (whatever the session was started with)."""
    return dataclasses.replace(settings, share_cores_with=None)


def _run_threads(settings: Settings) -> int:
    """Run one run through the protocol; the CPU threads it ran with (as recorded and as seen in training)."""
    plan = protocol.plan("finetune", "cpu", "m", "base", "BIOSSES", next(_SEEDS), {"x": 1}, {}, "counting")
    record, reused = protocol.run(NotingKind(lambda: {"threads_seen": torch.get_num_threads()}), plan, settings)
    assert not reused and record.cpu_threads == record.details["threads_seen"]
    assert records.read_record(plan.key.path(settings.results_root)).cpu_threads == record.cpu_threads
    return int(record.cpu_threads)


def test_a_running_process_is_alive_and_a_finished_unreaped_one_is_not():
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        assert alive(proc.pid)
    finally:
        proc.stdin.close()
    import time

    deadline = time.monotonic() + 30
    while alive(proc.pid) and time.monotonic() < deadline:  # exited, not yet waited for: a zombie
        time.sleep(0.05)
    assert not alive(proc.pid)
    proc.wait()
    assert not alive(proc.pid)


def test_wanted_threads_follow_the_named_process(monkeypatch, settings: Settings):
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    torch.set_num_threads(2)
    assert Settings().run_threads() is None and _run_threads(settings) == 2
    sharing = settings.replace(share_cores_with=os.getpid())  # a process that surely runs
    assert sharing.run_threads() == 1
    assert _run_threads(sharing) == 1
    monkeypatch.setattr(os, "cpu_count", lambda: 16)
    assert sharing.run_threads() == 15
    torch.set_num_threads(1)  # never more than the process started with, never 0
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    assert _run_threads(sharing) == 1
    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    assert sharing.run_threads() == 1
    torch.set_num_threads(4)
    monkeypatch.setattr(os, "cpu_count", lambda: 16)
    assert _run_threads(sharing) == 4
    torch.set_num_threads(2)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    for text in ("", "abc", "-3"):
        given = Settings.from_env({SHARE_ENV: text})
        assert given.share_cores_with is None and given.run_threads() is None
        assert _run_threads(settings.replace(share_cores_with=given.share_cores_with)) == 2


def test_follow_drops_a_thread_while_the_process_runs_and_takes_it_back(monkeypatch, settings: Settings):
    torch.set_num_threads(2)
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    sharing = settings.replace(share_cores_with=proc.pid)
    try:
        assert _run_threads(sharing) == 1
        assert torch.get_num_threads() == 2  # the run's count ends with the run
    finally:
        proc.stdin.close()
        proc.wait()
    assert sharing.run_threads() is None and _run_threads(sharing) == 2  # the next run takes the core back
    torch.set_num_threads(1)  # the process's own count is the run's: nothing raises it
    assert _run_threads(sharing) == 1 and torch.get_num_threads() == 1


def test_without_the_variable_nothing_changes(settings: Settings):
    assert settings.share_cores_with is None
    torch.set_num_threads(2)
    assert _run_threads(settings) == 2 and torch.get_num_threads() == 2
    torch.set_num_threads(1)  # a user's own choice, e.g. in JupyterLab, is theirs to keep
    assert _run_threads(settings) == 1 and torch.get_num_threads() == 1
