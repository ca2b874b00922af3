"""Errors of the operating system (issue 20, §4): a full disk, a read-only results root, a file where a folder
belongs, an unreadable file. Each ends in one line naming the path and what to do (exit 1, no traceback); a
failed record write leaves neither a partial record nor an orphan predictions file; a read-only results root
still reuses its records.

The tests run as root in CI, and root ignores file modes: a ``chmod``-ed folder would not fail, and a tmpfs
needs a ``mount`` that CI does not allow. The disk and the mount are therefore simulated where the kernel
would refuse — opening for writing, creating folders, renaming and removing (``EROFS``), or writing data
(``ENOSPC``) under one folder raise the errno a read-only or full file system gives — so each case fails the
same way whoever runs it. (On the development machine the same cases were also run on a real 64 KiB tmpfs
and a read-only bind mount.)
"""

from __future__ import annotations

import builtins
import errno
import io
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from medibio.cli.main import os_error_message
from medibio.core import atomic
from medibio.core.settings import Settings
from medibio.runs import protocol
from medibio.runs import records as rec
from medibio.tasks import scierc as data
from tests.support.cli import run_main

TINY = Path(__file__).parent / "fixtures" / "scierc" / "tiny.json"
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


class FileSystem:
    """Make the folder ``root`` behave like a read-only mount (``EROFS`` for every change) or a full disk
    (``ENOSPC`` on writing data, creating files succeeds as on a real full disk with free inodes)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, root: Path) -> None:
        self.monkeypatch, self.root, self.fds = monkeypatch, str(root), set[int]()

    def _inside(self, path: Any) -> bool:
        if isinstance(path, int):
            return path in self.fds
        return os.path.abspath(os.fsdecode(path)).startswith(self.root)

    def read_only(self) -> None:
        def refuse(path: Any) -> OSError:
            return OSError(errno.EROFS, os.strerror(errno.EROFS), os.fsdecode(path))

        real_open, real_mkdir, real_replace, real_unlink = os.open, os.mkdir, os.replace, os.unlink

        def open_(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
            if flags & _WRITE_FLAGS and self._inside(path):
                raise refuse(path)
            return real_open(path, flags, *args, **kwargs)

        def mkdir(path: Any, *args: Any, **kwargs: Any) -> None:
            if self._inside(path):
                if os.path.isdir(path):
                    raise FileExistsError(errno.EEXIST, "File exists", os.fsdecode(path))
                raise refuse(path)
            real_mkdir(path, *args, **kwargs)

        def replace(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
            if self._inside(dst) or self._inside(src):
                raise refuse(dst)
            real_replace(src, dst, *args, **kwargs)

        def unlink(path: Any, *args: Any, **kwargs: Any) -> None:
            if self._inside(path):
                raise refuse(path)
            real_unlink(path, *args, **kwargs)

        self._builtin_open(lambda file, mode: "r" not in mode or "+" in mode, refuse)
        for name, fake in (("open", open_), ("mkdir", mkdir), ("replace", replace), ("rename", replace),
                           ("unlink", unlink), ("remove", unlink)):
            self.monkeypatch.setattr(os, name, fake)

    def full(self, after_bytes: int = 0, only: str = "") -> None:
        """``ENOSPC`` once ``after_bytes`` more bytes were written under the folder (to files whose name
        contains ``only``); creating files still works, as on a full disk with free inodes."""
        budget = {"left": after_bytes}
        real_open, real_fdopen, real_close = os.open, os.fdopen, os.close

        def spend(count: int) -> None:
            if count > budget["left"]:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            budget["left"] -= count

        class Limited:
            """A file object of the full disk: its writes spend the budget."""

            def __init__(self, inner: Any) -> None:
                self.inner = inner

            def write(self, text: Any) -> int:
                spend(len(text.encode() if isinstance(text, str) else text))
                return self.inner.write(text)

            def __getattr__(self, name: str) -> Any:
                return getattr(self.inner, name)

            def __enter__(self) -> Limited:
                return self

            def __exit__(self, *exc: object) -> None:
                self.inner.close()

        def open_(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
            fd = real_open(path, flags, *args, **kwargs)
            if self._inside(path) and only in os.fsdecode(path):
                self.fds.add(fd)
            return fd

        def fdopen(fd: int, *args: Any, **kwargs: Any) -> Any:
            inner = real_fdopen(fd, *args, **kwargs)
            return Limited(inner) if fd in self.fds else inner

        def pwrite(fd: int, payload: bytes, offset: int) -> int:
            if fd in self.fds:
                spend(len(payload))
            return real_pwrite(fd, payload, offset)

        def close(fd: int) -> None:
            self.fds.discard(fd)
            real_close(fd)

        real_pwrite = os.pwrite
        self.monkeypatch.setattr(os, "open", open_)
        self.monkeypatch.setattr(os, "fdopen", fdopen)
        self.monkeypatch.setattr(os, "pwrite", pwrite)
        self.monkeypatch.setattr(os, "close", close)
        self._builtin_open(lambda file, mode: False, None)  # Path.write_* under the folder: see read_only

    def _builtin_open(self, writes: Any, refuse: Any) -> None:
        real = builtins.open

        def open_(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
            if not isinstance(file, int) and writes(file, mode) and self._inside(file):
                raise refuse(file)
            return real(file, mode, *args, **kwargs)

        self.monkeypatch.setattr(builtins, "open", open_)
        self.monkeypatch.setattr(io, "open", open_)


# --------------------------------------------------------------------------- a kind of run with no model


class Toy:
    """A kind that 'trains' instantly: one prediction per example, an artifact folder, a record."""

    name = "toy"

    def __init__(self) -> None:
        self.trained = 0

    def replan(self, request: Mapping[str, Any], settings: Settings) -> protocol.Plan:
        return make_plan(**request)

    def describe(self, record: rec.RunRecord) -> str:
        return f"test {record.score_test}"

    def train(self, plan: protocol.Plan, context: protocol.RunContext) -> protocol.Outcome:
        self.trained += 1
        (context.workdir / "model").mkdir(parents=True, exist_ok=True)
        (context.workdir / "model" / "weights.bin").write_bytes(b"w" * 64)
        record = context.record(dataset=plan.key.dataset, model={"name": "toy"}, profile=plan.key.profile,
                                seed=plan.key.seed, score_test=50.0, wall_time_s=0.0)
        return protocol.Outcome(record, [{"id": str(i), "prediction": i} for i in range(50)], ("model",))


def make_plan(lr: float = 1e-3) -> protocol.Plan:
    return protocol.plan("toy", "smoke", "toy", "base", "BIOSSES", 1, {"lr": lr}, {"lr": lr}, "toy run")


@pytest.fixture()
def toy_settings(session_settings: Settings, tmp_path: Path) -> Settings:
    return session_settings.replace(results_root=tmp_path / "results")


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


# --------------------------------------------------------------------------- the protocol


def test_a_read_only_results_root_reuses_its_records(toy_settings: Settings, monkeypatch) -> None:
    kind, root = Toy(), toy_settings.results_root
    first, reused = protocol.run(kind, make_plan(), toy_settings)
    assert not reused and kind.trained == 1
    before = _files(root)
    FileSystem(monkeypatch, root).read_only()
    with pytest.raises(OSError) as info:  # the simulation is real: writing there fails
        (root / "probe").write_text("x")
    assert info.value.errno == errno.EROFS
    again, reused = protocol.run(kind, make_plan(), toy_settings)
    assert reused and kind.trained == 1 and again.created == first.created
    with pytest.raises(OSError) as info:  # nothing recorded for this one: it would have to train, and cannot
        protocol.run(kind, make_plan(lr=2e-3), toy_settings)
    assert info.value.errno == errno.EROFS and str(root) in str(info.value.filename)
    with pytest.raises(OSError):  # --force means training: refused too
        protocol.run(kind, make_plan(), toy_settings, force=True)
    assert kind.trained == 1 and _files(root) == before


@pytest.mark.parametrize("budget", [0, 100, 3000])
def test_a_disk_that_fills_leaves_no_lock_no_predictions_and_no_partial_record(toy_settings: Settings, monkeypatch,
                                                                               budget: int) -> None:
    """0 bytes: the lock cannot be written; 100: the predictions; 3000: the record (the predictions, about
    1.3 kB, were written and must be taken back)."""
    kind, root = Toy(), toy_settings.results_root
    root.mkdir(parents=True)
    FileSystem(monkeypatch, root).full(after_bytes=budget)
    with pytest.raises(OSError) as info:
        protocol.run(kind, make_plan(), toy_settings)
    assert info.value.errno == errno.ENOSPC and info.value.filename and str(root) in info.value.filename
    key = make_plan().key
    assert not key.path(root).exists() and not key.predictions_path(root).exists()
    assert not key.lock_path(root).exists()
    assert not [f for f in _files(root) if f.endswith((".json", ".jsonl", ".lock", ".tmp"))], _files(root)
    if budget:  # trained: its artifacts are back in the work folder, for the next attempt
        assert not key.artifacts_path(root).exists()
    monkeypatch.undo()
    record, reused = protocol.run(kind, make_plan(), toy_settings)  # space again: it runs and records
    assert not reused and record.path(root).is_file() and key.predictions_path(root).is_file()


def test_a_forced_rerun_whose_record_fails_leaves_no_stale_record_beside_new_predictions(toy_settings: Settings,
                                                                                         monkeypatch) -> None:
    kind, root = Toy(), toy_settings.results_root
    protocol.run(kind, make_plan(), toy_settings)
    key = make_plan().key
    FileSystem(monkeypatch, root).full(after_bytes=0, only=key.path(root).name)  # only the record fails
    with pytest.raises(OSError, match="No space left"):
        protocol.run(kind, make_plan(), toy_settings, force=True)
    assert not key.path(root).exists() and not key.predictions_path(root).exists()


def test_atomic_writes_name_the_file_they_could_not_write(tmp_path: Path, monkeypatch) -> None:
    FileSystem(monkeypatch, tmp_path).full(after_bytes=10)
    target = tmp_path / "table.json"
    with pytest.raises(OSError) as info:
        atomic.write_json(target, {"rows": list(range(100))})
    assert info.value.errno == errno.ENOSPC and info.value.filename == str(target)
    assert os.listdir(tmp_path) == []  # no temporary file left


# --------------------------------------------------------------------------- the command line


def _one_error_line(err: str) -> str:
    lines = [line for line in err.replace("\r", "\n").splitlines() if line.strip()]
    errors = [line for line in lines if "error:" in line]
    assert len(errors) == 1 and "Traceback" not in err, err
    return errors[0][errors[0].index("error:"):]


def _scierc_root(tmp_path: Path) -> Path:
    folder = tmp_path / "data" / "scierc"
    folder.mkdir(parents=True)
    for split in data.SPLITS:
        (folder / f"{split}.json").write_bytes(TINY.read_bytes())
    return tmp_path / "data"


def test_an_unreadable_input_file_is_one_line_naming_it(tmp_path: Path, monkeypatch, capsys) -> None:
    root = _scierc_root(tmp_path)
    predictions = tmp_path / "pred.jsonl"
    predictions.write_text('{"doc_key": "D1"}\n')
    real = Path.read_bytes

    def read_bytes(self: Path) -> bytes:
        if self == predictions:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(self))
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    code, _, err = run_main(["scierc", "evaluate", str(predictions), "--data-root", str(root), "--partial"], capsys)
    line = _one_error_line(err)
    assert code == 1 and line == (f"error: Permission denied: {predictions}; check its permissions or choose a "
                                  "folder you may use (--results-root, --data-root)")


@pytest.mark.parametrize(("number", "advice"), [
    (errno.ENOSPC, "free space there"), (errno.EROFS, "read-only"), (errno.ENOTDIR, "a file where a folder"),
    (errno.EISDIR, "a folder is where a file belongs"), (errno.EIO, "check the disk"), (errno.EBUSY, "check the path"),
])
def test_every_os_error_reads_as_one_line_with_path_and_advice(number: int, advice: str) -> None:
    message = os_error_message(OSError(number, os.strerror(number), "/r/x.json"))
    assert message.startswith(f"{os.strerror(number)}: /r/x.json; ") and advice in message and "\n" not in message
    assert os_error_message(OSError(number, os.strerror(number), "/a", None, "/b")).startswith(
        f"{os.strerror(number)}: /a -> /b; ")


@pytest.mark.realdata
def test_results_root_problems_are_one_line_before_training(tmp_path: Path, data_root: Path, monkeypatch,
                                                             capfd) -> None:
    # capfd, not capsys: once a kernel module was imported in this process (the notebook tests), progress lines
    # go to the process's own stderr descriptor (medibio.core.progress.terminal), which capsys does not see
    def finetune(results: Path) -> tuple[int, str]:
        code, _, err = run_main(["finetune", "--task", "BIOSSES", "--profile", "smoke", "--limit", "8",
                                 "--data-root", str(data_root), "--results-root", str(results)], capfd)
        return code, err

    a_file = tmp_path / "results-file"
    a_file.write_text("")
    code, err = finetune(a_file)
    line = _one_error_line(err)
    assert code == 1 and line.startswith(f"error: Not a directory: {a_file}/") and "move the file" in line

    code, err = finetune(tmp_path / "results")  # trains and records
    assert code == 0, err
    FileSystem(monkeypatch, tmp_path / "results").read_only()
    code, err = finetune(tmp_path / "results")
    assert code == 0 and "reused its record" in err, err

    FileSystem(monkeypatch, tmp_path / "full").full()
    (tmp_path / "full").mkdir()
    code, err = finetune(tmp_path / "full")
    line = _one_error_line(err)
    assert code == 1 and line.startswith(f"error: No space left on device: {tmp_path / 'full'}/")
    assert "free space there" in line and not list((tmp_path / "full").rglob("*.lock"))


def test_data_check_reports_an_unreadable_file_as_its_row(tmp_path: Path, monkeypatch) -> None:
    from medibio.tasks import datacheck, registry

    folder = tmp_path / "blurb" / "BIOSSES"
    folder.mkdir(parents=True)
    for number, split in enumerate(("train", "dev", "test")):
        (folder / f"{split}.tsv").write_text(f"pair_id\tsent1\tsent2\tscore\n{number}\t{split} a .\tb .\t1.0\n")
    real = Path.read_bytes

    def read_bytes(self: Path) -> bytes:
        if self.name == "dev.tsv":
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(self))
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    rows = {r.split: r for r in datacheck.check_dataset(registry.get("BIOSSES"), tmp_path)}
    assert rows["dev"].status == "error" and rows["dev"].note == f"cannot read {folder / 'dev.tsv'}: Permission denied"
    assert rows["train"].status != "error" and rows["test"].status != "error"


# --------------------------------------------------------------------------- the book's leftovers (issue 39 §4)


def _chapter(tmp_path: Path, slug: str = "one") -> Any:
    import nbformat

    from medibio.book import chapters

    src = tmp_path / "src" / f"{slug}.ipynb"
    src.parent.mkdir(parents=True, exist_ok=True)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1")]
    nbformat.write(nb, str(src))
    return chapters.TocEntry(slug, slug.title(), str(src))


def _previous(book: Path, name: str = "one.ipynb", profile: str = "smoke") -> Path:
    import nbformat

    book.mkdir(parents=True, exist_ok=True)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("the previous, complete execution")]
    nb.metadata["papermill"] = {"parameters": {"profile": profile}}
    nbformat.write(nb, str(book / name))
    return book / name


def test_an_interrupted_chapter_leaves_the_previous_one_in_book(tmp_path: Path, monkeypatch) -> None:
    """Ctrl-C during a chapter once left a half-executed notebook in book/, which broke `--no-execute`."""
    import papermill

    from medibio.book import build

    chapter, book = _chapter(tmp_path), tmp_path / "book"
    before = _previous(book).read_bytes()

    def interrupted(source: str, output: str, **kwargs: Any) -> None:
        Path(output).write_text('{"cells": [half')  # papermill writes as it goes
        raise KeyboardInterrupt

    monkeypatch.setattr(papermill, "execute_notebook", interrupted)
    monkeypatch.setattr(build, "_declared_parameters", lambda path: {"profile"})
    with pytest.raises(KeyboardInterrupt):
        build.execute_chapter(chapter, book, {"profile": "smoke"})
    assert (book / "one.ipynb").read_bytes() == before
    assert sorted(p.name for p in book.iterdir()) == ["one.ipynb"]  # no partial file left


@pytest.mark.parametrize("keep_failed", [False, True])
def test_a_failed_chapter_replaces_the_previous_one_only_under_keep_going(tmp_path: Path, monkeypatch,
                                                                          keep_failed: bool) -> None:
    import papermill
    from papermill.exceptions import PapermillExecutionError

    from medibio.book import build

    chapter, book = _chapter(tmp_path), tmp_path / "book"
    _previous(book)

    def failing(source: str, output: str, **kwargs: Any) -> None:
        import nbformat

        nbformat.write(nbformat.v4.new_notebook(), output)
        raise PapermillExecutionError(1, 1, "x = 1", "ValueError", "broken", [])

    monkeypatch.setattr(papermill, "execute_notebook", failing)
    monkeypatch.setattr(build, "_declared_parameters", lambda path: {"profile"})
    result = build.execute_chapter(chapter, book, {"profile": "smoke"}, keep_failed=keep_failed)
    assert result.failed and result.error == "ValueError: broken"
    replaced = "the previous, complete execution" not in (book / "one.ipynb").read_text()
    assert replaced is keep_failed
    assert (book / ".one.failed.ipynb").is_file() is not keep_failed
    assert not list(book.glob(".*partial*"))


def test_a_partial_build_never_mixes_two_profiles(tmp_path: Path, monkeypatch) -> None:
    """`--only intro` after a smoke build mixed the two profiles' pages and replaced the run pages the smoke
    chapters link to."""
    from medibio.book import build
    from medibio.core.errors import MedibioError

    one, two = _chapter(tmp_path, "one"), _chapter(tmp_path, "two")
    monkeypatch.setattr(build, "CHAPTERS", (one, two))
    book = tmp_path / "book"
    _previous(book, "one.ipynb", profile="smoke")
    settings = Settings(results_root=tmp_path / "results")
    with pytest.raises(MedibioError, match=r"one \(profile 'smoke'\).*mix two builds"):
        build.execute_all("cpu", settings, book_dir=book, execute=False)
    assert [r.status for r in build.execute_all("smoke", settings, book_dir=book, execute=False)] == ["kept",
                                                                                                      "copied"]
    # a chapter's own parameters (its tasks, its seeds) may differ within one book: only profile and model count
    import nbformat

    kept = nbformat.read(str(book / "one.ipynb"), as_version=4)
    kept.metadata["papermill"]["parameters"]["seeds"] = [1]
    nbformat.write(kept, str(book / "one.ipynb"))
    assert [r.status for r in build.execute_all("smoke", settings, book_dir=book, execute=False,
                                                extra={"seeds": [1, 2]})] == ["kept", "kept"]


class _FakeJupyterBook:
    """jupyter-book as a subprocess: writes ``index.html`` (``text``) into the --path-output folder, or half a
    site and a failure."""

    def __init__(self, text: str, fail: bool = False) -> None:
        self.text, self.fail = text, fail

    def __call__(self, cmd: list[str], **kwargs: Any) -> Any:
        import subprocess

        html = Path(cmd[cmd.index("--path-output") + 1]) / "_build" / "html"
        html.mkdir(parents=True)
        (html / "index.html").write_text(self.text)
        if self.fail:
            return subprocess.CompletedProcess(cmd, 1, "", "PermissionError: [Errno 13] Permission denied: "
                                               "'/x/_build/.doctrees'\nLook above for the cause.\n")
        return subprocess.CompletedProcess(cmd, 0, "", "")


def test_a_failure_during_the_html_step_leaves_the_previous_site(tmp_path: Path, monkeypatch) -> None:
    from medibio.book import assets, build

    monkeypatch.setattr(assets, "install_mathjax", lambda: None)
    html = tmp_path / "_build" / "html"
    monkeypatch.setattr(build.subprocess, "run", _FakeJupyterBook("old"))
    assert build.build_html(tmp_path) == html and (html / "index.html").read_text() == "old"

    monkeypatch.setattr(build.subprocess, "run", _FakeJupyterBook("half", fail=True))
    with pytest.raises(build.BookBuildError, match=r"PermissionError: \[Errno 13\] Permission denied"):
        build.build_html(tmp_path)  # the real error is shown, not only "Look above for the cause"
    assert (html / "index.html").read_text() == "old"

    def full_disk(site: Path) -> None:  # the run pages, written into the new site before it is published
        raise OSError(errno.ENOSPC, "No space left on device", str(site / "runs"))

    monkeypatch.setattr(build.subprocess, "run", _FakeJupyterBook("new"))
    with pytest.raises(OSError, match="No space left"):
        build.build_html(tmp_path, finish=full_disk)
    assert (html / "index.html").read_text() == "old"
    assert build.build_html(tmp_path, finish=lambda site: (site / "runs").mkdir()) == html
    assert (html / "index.html").read_text() == "new" and (html / "runs").is_dir()
    assert sorted(p.name for p in (tmp_path / "_build").iterdir()) == ["html"]  # no staging folder left

    # the last step fails: the new site cannot take the old one's place, and the old one goes back
    real_rename = Path.rename

    def rename(self: Path, target: Any) -> Path:
        if self.name == "html" and self.parent.name == "_build" and Path(target) == html:
            raise OSError(errno.EXDEV, "Invalid cross-device link", str(self))
        return real_rename(self, target)

    monkeypatch.setattr(build.subprocess, "run", _FakeJupyterBook("newer"))
    monkeypatch.setattr(Path, "rename", rename)
    with pytest.raises(OSError, match="cross-device"):
        build.build_html(tmp_path)
    assert (html / "index.html").read_text() == "new"
