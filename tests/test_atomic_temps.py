"""Leftover temporary files of writers killed mid-way are removed by the next write into the folder; a live
writer's temporary file, and one from another host, are never touched (issue 12, concurrency)."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
from pathlib import Path

from medibio.core import atomic

DEAD_PID = 2**22 + 1  # above Linux's largest pid_max: no process can have it


def _temp(folder: Path, name: str, pid: int, host: str | None = None) -> Path:
    path = folder / f".{name}.{host or atomic._HOST}.{pid}.abc123_x.tmp"
    path.write_text("{half", encoding="utf-8")
    return path


def test_temp_names_carry_host_and_pid(tmp_path: Path) -> None:
    seen: list[str] = []
    with atomic.atomic_open(tmp_path / "rec.json") as fh:
        seen = [p.name for p in tmp_path.iterdir()]
        fh.write("{}")
    assert len(seen) == 1 and seen[0].startswith(f".rec.json.{atomic._HOST}.{os.getpid()}.")
    assert atomic._TEMP.fullmatch(seen[0])
    assert [p.name for p in tmp_path.iterdir()] == ["rec.json"]


def test_next_write_removes_temps_of_dead_writers_only(tmp_path: Path) -> None:
    dead = _temp(tmp_path, "seed1.json", DEAD_PID)
    live = _temp(tmp_path, "seed2.json", os.getppid())  # the test runner's parent: alive
    elsewhere = _temp(tmp_path, "seed3.json", DEAD_PID, host="other-node")
    unrelated = tmp_path / ".notes.tmp"
    unrelated.write_text("x", encoding="utf-8")
    atomic.write_json(tmp_path / "seed4.json", {"ok": True})
    assert not dead.exists()
    assert live.exists() and elsewhere.exists() and unrelated.exists()
    assert json.loads((tmp_path / "seed4.json").read_text()) == {"ok": True}


def _write_forever(path: str) -> None:
    with atomic.atomic_open(path) as fh:
        fh.write("{")
        fh.flush()
        os.kill(os.getpid(), signal.SIGKILL)  # killed mid-write, like an out-of-memory kill


def test_a_writer_killed_mid_write_leaves_a_temp_that_the_next_run_removes(tmp_path: Path) -> None:
    target = tmp_path / "record.json"
    proc = multiprocessing.get_context("fork").Process(target=_write_forever, args=(str(target),))
    proc.start()
    proc.join()
    assert proc.exitcode == -signal.SIGKILL
    leftovers = [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert len(leftovers) == 1 and not target.exists()
    assert atomic.remove_stale_temps(tmp_path) == leftovers
    assert list(tmp_path.iterdir()) == []


def _aged(path: Path, seconds: float) -> Path:
    then = path.stat().st_mtime - seconds
    os.utime(path, (then, then))
    return path


def test_old_unlocked_temps_go_whatever_host_or_pid_they_name(tmp_path: Path) -> None:
    """A pid reused after a container restart (even our own) or another host's writer that died: the
    temporary file is unlocked, and once older than the grace period nothing can still be writing it."""
    mine = _aged(_temp(tmp_path, "seed1.json", os.getpid()), atomic.TEMP_GRACE_S + 5)
    elsewhere = _aged(_temp(tmp_path, "seed2.json", DEAD_PID, host="other-node"), atomic.TEMP_GRACE_S + 5)
    fresh = _temp(tmp_path, "seed3.json", DEAD_PID, host="other-node")
    assert sorted(atomic.remove_stale_temps(tmp_path)) == sorted([mine, elsewhere])
    assert fresh.exists()


def _write_slowly(path: str, started, release) -> None:
    with atomic.atomic_open(path) as fh:
        fh.write("{")
        fh.flush()
        started.set()
        release.wait(60)
        fh.write("}")


def test_a_temp_being_written_is_never_removed_however_old(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("fork")
    started, release = ctx.Event(), ctx.Event()
    target = tmp_path / "record.json"
    proc = ctx.Process(target=_write_slowly, args=(str(target), started, release))
    proc.start()
    try:
        assert started.wait(60)
        [temp] = [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
        _aged(temp, atomic.TEMP_GRACE_S * 10)
        assert atomic.remove_stale_temps(tmp_path) == [] and temp.exists()
    finally:
        release.set()
        proc.join(60)
    assert proc.exitcode == 0 and target.read_text() == "{}"
