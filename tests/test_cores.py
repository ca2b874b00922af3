"""A chapter gives up a core while the build's background process runs, and takes it back when it ends."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

from medibio import cores


@pytest.fixture(autouse=True)
def _fresh_state():
    threads = torch.get_num_threads()
    cores.reset()
    yield
    cores.reset()
    torch.set_num_threads(threads)


def test_a_running_process_is_alive_and_a_finished_unreaped_one_is_not():
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        assert cores.alive(proc.pid)
    finally:
        proc.stdin.close()
    import time

    deadline = time.monotonic() + 30
    while cores.alive(proc.pid) and time.monotonic() < deadline:  # exited, not yet waited for: a zombie
        time.sleep(0.05)
    assert not cores.alive(proc.pid)
    proc.wait()
    assert not cores.alive(proc.pid)


def test_wanted_threads_follow_the_named_process(monkeypatch):
    monkeypatch.delenv(cores.ENV, raising=False)
    assert cores.wanted_threads(2, cpus=2) == 2
    monkeypatch.setenv(cores.ENV, str(os.getpid()))  # a process that surely runs
    assert cores.sharing_with() == os.getpid()
    assert cores.wanted_threads(2, cpus=2) == 1
    assert cores.wanted_threads(16, cpus=16) == 15
    assert cores.wanted_threads(1, cpus=2) == 1  # never more than the process started with, never 0
    assert cores.wanted_threads(4, cpus=16) == 4
    for text in ("", "abc", "-3"):
        monkeypatch.setenv(cores.ENV, text)
        assert cores.sharing_with() is None and cores.wanted_threads(2, cpus=2) == 2


def test_follow_drops_a_thread_while_the_process_runs_and_takes_it_back(monkeypatch):
    torch.set_num_threads(2)
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setenv(cores.ENV, str(proc.pid))
    try:
        assert cores.follow() == 1 and torch.get_num_threads() == 1
    finally:
        proc.stdin.close()
        proc.wait()
    assert cores.follow() == 2  # the next run to start takes the core back
    torch.set_num_threads(1)  # given back once; what happens to the count afterwards is not this module's
    assert cores.follow() == 1 and torch.get_num_threads() == 1


def test_without_the_variable_nothing_changes(monkeypatch):
    monkeypatch.delenv(cores.ENV, raising=False)
    torch.set_num_threads(2)
    assert cores.follow() == 2 and torch.get_num_threads() == 2
    torch.set_num_threads(1)  # a user's own choice, e.g. in JupyterLab, is theirs to keep
    assert cores.follow() == 1 and torch.get_num_threads() == 1
