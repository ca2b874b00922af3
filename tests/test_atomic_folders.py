"""Folders published whole (:func:`medibio.core.atomic.publish_folder`): builders of one folder take turns, a
reader never sees half a folder, a failed or killed build leaves the previous folder as it was, and the next
builder removes a killed one's leftovers."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from pathlib import Path

import pytest

from medibio.core import atomic

FORK = multiprocessing.get_context("fork")
FILES = ("a.txt", "b.txt")


def _complete(folder: Path) -> bool:
    return all((folder / name).is_file() for name in FILES)


def _fill(folder: Path, text: str = "new") -> None:
    for name in FILES:
        (folder / name).write_text(text, encoding="utf-8")


def _build_once_slowly(final: str, calls: str, building, release) -> None:
    """A builder that says when it is inside its build and waits there until released."""

    def build(folder: Path) -> None:
        with open(calls, "a", encoding="utf-8") as fh:
            fh.write(f"{os.getpid()}\n")
        building.set()
        release.wait(60)
        _fill(folder)

    atomic.publish_folder(final, build, complete=_complete)


def _left_in(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_processes_asking_together_build_once_and_all_get_the_finished_folder(tmp_path: Path) -> None:
    final, calls = tmp_path / "vocab", tmp_path / "calls.txt"
    building, release = FORK.Event(), FORK.Event()
    first = FORK.Process(target=_build_once_slowly, args=(str(final), str(calls), building, release))
    first.start()
    assert building.wait(60)
    second = FORK.Process(target=_build_once_slowly, args=(str(final), str(calls), FORK.Event(), FORK.Event()))
    second.start()
    time.sleep(1.0)
    # the first is mid-build; the second waits for it instead of building in the same folder or deleting it
    assert (tmp_path / "vocab.building").is_dir() and not final.exists() and second.is_alive()
    release.set()
    first.join(60)
    second.join(60)
    assert (first.exitcode, second.exitcode) == (0, 0)
    assert calls.read_text(encoding="utf-8").split() == [str(first.pid)]  # built once
    assert _complete(final) and _left_in(tmp_path) == ["calls.txt", "vocab"]  # no temporary folder, no lock file


def test_every_build_of_a_folder_happens_at_the_same_path(tmp_path: Path) -> None:
    """What a build writes may hold its folder's path (SentencePiece's model prefix in ``spm.model``), and
    those bytes name runs: the path must not depend on the process or the attempt."""
    seen: list[Path] = []

    def build(folder: Path) -> None:
        seen.append(folder)
        _fill(folder)

    for _ in range(2):
        atomic.publish_folder(tmp_path / "vocab", build)
    assert seen == [tmp_path / "vocab.building"] * 2


def test_a_complete_folder_is_kept_and_an_incomplete_one_replaced(tmp_path: Path) -> None:
    final = tmp_path / "vocab"
    final.mkdir()
    (final / "a.txt").write_text("half", encoding="utf-8")  # an older builder killed mid-way, in place
    assert atomic.publish_folder(final, _fill, complete=_complete) == final
    assert (final / "a.txt").read_text(encoding="utf-8") == "new" and _complete(final)
    assert atomic.publish_folder(final, lambda folder: pytest.fail("rebuilt a complete folder"),
                                 complete=_complete) == final


def test_without_complete_every_call_replaces_the_folder_whole(tmp_path: Path) -> None:
    final = tmp_path / "model"
    final.mkdir()
    (final / "old.bin").write_bytes(b"old")
    atomic.publish_folder(final, _fill)
    assert _left_in(final) == list(FILES) and _left_in(tmp_path) == ["model"]


def test_a_failed_build_leaves_the_previous_folder_and_nothing_else(tmp_path: Path) -> None:
    final = tmp_path / "model"
    final.mkdir()
    (final / "old.bin").write_bytes(b"old")

    def broken(folder: Path) -> None:
        (folder / "a.txt").write_text("half", encoding="utf-8")
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space left"):
        atomic.publish_folder(final, broken)
    assert _left_in(tmp_path) == ["model"] and (final / "old.bin").read_bytes() == b"old"


def _killed_mid_build(final: str) -> None:
    def build(folder: Path) -> None:
        (folder / "a.txt").write_text("half", encoding="utf-8")
        os.kill(os.getpid(), signal.SIGKILL)  # killed mid-build, like an out-of-memory kill

    atomic.publish_folder(final, build, complete=_complete)


def test_a_killed_builders_folder_is_removed_by_the_next_builder_and_a_siblings_is_not(tmp_path: Path) -> None:
    final = tmp_path / "model"
    proc = FORK.Process(target=_killed_mid_build, args=(str(final),))
    proc.start()
    proc.join(60)
    assert proc.exitcode == -signal.SIGKILL
    # its lock file stays too, free: the kernel dropped the lock with the process
    assert set(_left_in(tmp_path)) == {".model.lock", "model.building"} and not final.exists()
    older = tmp_path / ".model.dead1234.building"  # an earlier version's randomly named build of this folder
    sibling = tmp_path / ".model.v2.abcd1234.building"  # and one of another folder, model.v2
    for folder in (older, sibling):
        folder.mkdir()
    atomic.publish_folder(final, _fill, complete=_complete)
    assert set(_left_in(tmp_path)) == {sibling.name, "model"} and _complete(final)
