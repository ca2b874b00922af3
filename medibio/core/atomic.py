"""Atomic file writes and locks: a reader (or a crash) never sees a half-written file, and a lock never
outlives its process.

Everything medibio writes that a later run reads back (run records, predictions, checkpoints' metadata,
tables) goes through these helpers: write to a temporary file in the same folder, fsync, then rename.

Folders built in several files (a tokenizer, a model) are published the same way, whole
(:func:`publish_folder`): built in a sibling folder under a lock beside it, then renamed into place, so that
a reader never sees half a folder and processes asking for one at the same time build it once.

Locks are the kernel's ``flock(2)`` locks, taken through ``filelock`` for named lock files
(:func:`exclusive_lock`, used for run locks by :func:`medibio.runs.records.run_lock` and for folders by
:func:`publish_folder`) and directly on the descriptor of a temporary file while it is written. The kernel
drops a lock when its process ends, however it ends, so no lock can be stale: no process ids are compared,
no age is guessed, a restarted container or another host sharing the folder changes nothing.

A writer killed mid-way (SIGKILL, power loss) leaves its temporary file behind. Temporary names carry the
writer's host and pid (``.{name}.{host}.{pid}.XXXXXXXX.tmp``) for people; the first write into a folder by a
later process removes the leftovers whose lock nobody holds and that are either from a dead process on this
host or older than :data:`TEMP_GRACE_S` (the grace covers the instant between creating a temporary file and
locking it). A file being written is always locked, so it is never touched.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import socket
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

from filelock import FileLock, Timeout

from medibio.core.errors import MedibioError

_UMASK = os.umask(0)
os.umask(_UMASK)

_HOST = re.sub(r"[^A-Za-z0-9_-]", "-", socket.gethostname()) or "host"
_TEMP = re.compile(r"\.(?P<name>.+)\.(?P<host>[A-Za-z0-9_-]+)\.(?P<pid>\d+)\.[A-Za-z0-9_]+\.tmp")
_SWEPT: set[Path] = set()  # folders this process has already cleaned
TEMP_GRACE_S = 60.0  # an unlocked temporary file this old has no live writer, whatever its name says


def temp_prefix(path: Path) -> str:
    """Prefix of the temporary sibling of ``path`` written by this process."""
    return f".{path.name}.{_HOST}.{os.getpid()}."


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # e.g. PermissionError: the process exists but belongs to someone else
        return True
    return True


def _unlocked(path: str) -> bool:
    """True when nobody holds the flock of ``path`` (we take it for an instant to find out)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    finally:
        os.close(fd)  # closing drops the lock we may have taken
    return True


def remove_stale_temps(folder: str | Path) -> list[Path]:
    """Delete temporary files in ``folder`` that no live writer holds; return what was removed.

    A file goes when its lock is free and it is either a dead process's on this host or older than
    :data:`TEMP_GRACE_S` (another host's, or one named with a pid that a restarted container reuses).
    """
    removed: list[Path] = []
    folder = Path(folder)
    try:
        entries = list(os.scandir(folder))
    except FileNotFoundError:
        return removed
    now = time.time()
    for entry in entries:
        match = _TEMP.fullmatch(entry.name)
        if not match or not entry.is_file(follow_symlinks=False):
            continue
        dead = match["host"] == _HOST and int(match["pid"]) != os.getpid() and not _alive(int(match["pid"]))
        try:
            old = now - entry.stat(follow_symlinks=False).st_mtime > TEMP_GRACE_S
        except FileNotFoundError:
            continue
        if (dead or old) and _unlocked(entry.path):
            with suppress(FileNotFoundError):
                os.unlink(entry.path)
                removed.append(Path(entry.path))
    return removed


def _sweep_once(folder: Path) -> None:
    key = folder.resolve()
    if key not in _SWEPT:
        _SWEPT.add(key)
        remove_stale_temps(folder)


def _naming(exc: OSError, path: Path, tmp: str | None = None) -> OSError:
    """``exc`` with ``path`` as its file when it names none or only the temporary file (a write or fsync
    on a full disk names nothing): the error a user sees says which file could not be written."""
    if exc.filename is not None and exc.filename != tmp:
        return exc
    return OSError(exc.errno, exc.strerror, str(path))


@contextmanager
def atomic_open(path: str | Path, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO[Any]]:
    """Open a temporary sibling of ``path``; on success it replaces ``path`` in one rename. On failure the
    temporary file is removed and an ``OSError`` names ``path``."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _sweep_once(path.parent)
        fd, tmp = tempfile.mkstemp(prefix=temp_prefix(path), suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise _naming(exc, path) from exc
    fcntl.flock(fd, fcntl.LOCK_EX)  # held until the file is renamed or removed: a sweeper never takes it
    binary = "b" in mode
    try:
        with os.fdopen(fd, mode, encoding=None if binary else encoding) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp creates 0600; give the file normal permissions
        os.replace(tmp, path)
    except BaseException as exc:
        with suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise _naming(exc, path, tmp) from exc
        raise


class LockHeldError(MedibioError):
    """Another live process holds the lock; ``holder`` is what it wrote into the lock file."""

    def __init__(self, path: Path, holder: dict[str, Any] | None) -> None:
        self.path = path
        self.holder = holder
        super().__init__(f"{describe_holder(holder)} holds the lock {path}")


def describe_holder(holder: dict[str, Any] | None) -> str:
    """``pid 123 on host-a since 2026-01-01T10:00:00+00:00``, or ``another process`` when unknown."""
    if not holder:
        return "another process"
    return f"pid {holder.get('pid')} on {holder.get('host')} since {holder.get('started')}"


def _holder(text: str | bytes) -> dict[str, Any] | None:
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def read_holder(path: str | Path) -> dict[str, Any] | None:
    """Who holds (or last held) the lock file ``path``, as it wrote it; None when unknown."""
    try:
        return _holder(Path(path).read_bytes())
    except OSError:
        return None


@contextmanager
def exclusive_lock(path: str | Path, wait: bool = True, poll_s: float = 0.5,
                   on_wait: Callable[[dict[str, Any] | None], None] | None = None,
                   on_stale: Callable[[dict[str, Any]], None] | None = None) -> Iterator[Path]:
    """Hold an exclusive kernel lock on the file ``path`` for the ``with`` block.

    The holder writes its pid, host and start time into the file (for messages only: the lock itself is
    the kernel's, released when the process ends, even by SIGKILL). ``wait=False`` raises
    :class:`LockHeldError` at once when another process holds it; else ``on_wait(holder)`` is called once and
    the call blocks. A file that still names a holder when the lock is taken was left by a process that
    died holding it: ``on_stale(holder)`` is told. On release the file is emptied and removed (``filelock``'s
    waiters notice a removed file and lock the new one instead).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    held: dict[str, Any] = {}

    def take(fd: int) -> None:
        try:
            os.lseek(fd, 0, os.SEEK_SET)
            held["previous"] = _holder(os.read(fd, 1 << 16))
            os.ftruncate(fd, 0)
            me = {"pid": os.getpid(), "host": socket.gethostname(),
                  "started": datetime.now(timezone.utc).isoformat(timespec="seconds")}
            os.pwrite(fd, json.dumps(me).encode(), 0)
        except OSError as exc:  # a full disk: no empty lock file is left behind (we hold it, so it may go)
            with suppress(OSError):
                os.unlink(path)
            raise _naming(exc, path) from exc
        held["fd"] = fd

    lock = FileLock(str(path), on_acquired=take, fallback_to_soft=False, poll_interval=poll_s)
    try:
        lock.acquire(blocking=False)
    except Timeout:  # a TimeoutError, hence an OSError: first
        holder = read_holder(path)
        if not wait:
            raise LockHeldError(path, holder) from None
        if on_wait:
            on_wait(holder)
        lock.acquire()
    except OSError as exc:  # the lock file cannot be created: a read-only folder, a full disk
        raise _naming(exc, path) from exc
    if held.get("previous") and on_stale:
        on_stale(held["previous"])
    try:
        yield path
    finally:
        with suppress(OSError):
            os.ftruncate(held["fd"], 0)
        with suppress(FileNotFoundError):
            os.unlink(path)
        lock.release()


def write_text(path: str | Path, text: str) -> Path:
    """Atomically write ``text`` to ``path``."""
    with atomic_open(path, "w") as fh:
        fh.write(text)
    return Path(path)


def write_json(path: str | Path, obj: Any, indent: int = 2) -> Path:
    """Atomically write ``obj`` as JSON (sorted keys off: records keep their logical order)."""
    with atomic_open(path, "w") as fh:
        json.dump(obj, fh, indent=indent, ensure_ascii=False, default=json_default)
        fh.write("\n")
    return Path(path)


def write_jsonl(path: str | Path, rows: Iterable[Any]) -> Path:
    """Atomically write one JSON object per line."""
    with atomic_open(path, "w") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False, default=json_default))
            fh.write("\n")
    return Path(path)


def json_default(obj: Any) -> Any:
    """JSON fallback for numpy scalars/arrays and paths: what the writers here make of them (a record's seal is
    computed on the same form, so that it is the seal of what is read back)."""
    if isinstance(obj, Path):
        return str(obj)
    for attr in ("item", "tolist"):
        if hasattr(obj, attr):
            return getattr(obj, attr)()
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def publish_folder(final: str | Path, build: Callable[[Path], object],
                   complete: Callable[[Path], bool] | None = None) -> Path:
    """Publish the folder ``final`` whole: ``build(folder)`` fills ``{final}.building``, which is then renamed
    to ``final``; return ``final``.

    Builders of one folder take a lock beside it (``.{name}.lock``, :func:`exclusive_lock`), so they never
    share or delete each other's work, and a reader sees no folder, the old one or the new one, never half of
    one. With ``complete``, a folder that passes it is kept: it is checked before the lock and again after
    waiting for it, so processes asking at the same time build once and all get the finished folder; an
    incomplete one (a builder of an older version killed mid-way) is replaced. Without ``complete`` every call
    builds anew and replaces ``final`` (moved aside to ``.{name}.replaced`` first: no folder there for an
    instant).
    A failed build leaves ``final`` as it was.

    The building folder's name is fixed, not a private temporary name: the lock makes it private, and some
    builds write their folder's path into what they build (SentencePiece keeps its model prefix in
    ``spm.model``), whose bytes name runs. What a killed builder left there is removed by the next one, which
    holds the lock, so nobody is still building it.
    """
    final = Path(final)
    if complete is not None and complete(final):
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    building, old = final.with_name(final.name + ".building"), final.with_name(f".{final.name}.replaced")
    with exclusive_lock(final.with_name(f".{final.name}.lock")):
        if complete is not None and complete(final):
            return final
        for left in (building, old, *_older_builds(final)):
            shutil.rmtree(left, ignore_errors=True)
        building.mkdir()
        try:
            build(building)
            if final.exists():
                os.rename(final, old)
            os.rename(building, final)
        except BaseException:
            if old.exists() and not final.exists():
                os.rename(old, final)  # the previous folder goes back
            shutil.rmtree(building, ignore_errors=True)
            raise
        shutil.rmtree(old, ignore_errors=True)
    return final


def _older_builds(final: Path) -> list[Path]:
    """Building folders that earlier versions gave random names (``.{name}.XXXXXXXX.building``, mkdtemp's)."""
    pattern = re.compile(rf"\.{re.escape(final.name)}\.[a-z0-9_]{{8}}\.building")
    with os.scandir(final.parent) as entries:
        return [Path(e.path) for e in entries
                if pattern.fullmatch(e.name) and e.is_dir(follow_symlinks=False)]
