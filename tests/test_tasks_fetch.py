"""`medibio data fetch`: verify-and-unpack on local archives (file:// URLs stand in for the network)."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from medibio.cli import data as data_cli
from medibio.core.errors import DataMissingError, InputFormatError
from medibio.tasks import fetch

FILES = {"bench/sts-train.csv": "a\tb\t5.0\n", "bench/sts-dev.csv": "c\td\t1.0\n", "bench/readme.txt": "hi\n"}


def _tar(path: Path, files: dict[str, str]) -> Path:
    with tarfile.open(path, "w:gz") as tf:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path


def _zip(path: Path, files: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
    return path


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _source(archive: Path, kind: str = "tar.gz", sha256: str | None = None) -> fetch.Source:
    return fetch.Source("toy", (archive.as_uri(),), archive.name, kind, sha256, (("bench/", "ift/toy/"),))


class CountingDownloader:
    """Wraps the real urllib downloader (file:// URLs work offline) and counts calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, url: str, dest: Path, progress) -> None:
        self.calls += 1
        fetch.urllib_download(url, dest, progress)


def test_good_checksum_downloads_verifies_and_unpacks(tmp_path: Path) -> None:
    archive = _tar(tmp_path / "toy.tar.gz", FILES)
    root = tmp_path / "root"
    result = fetch.fetch(_source(archive, sha256=_sha(archive)), root, show_progress=False)
    assert (result.status, result.verified, result.sha256) == ("fetched", True, _sha(archive))
    assert (root / "ift/toy/sts-train.csv").read_text() == "a\tb\t5.0\n"
    assert sorted(p.name for p in (root / "ift/toy").iterdir()) == ["readme.txt", "sts-dev.csv", "sts-train.csv"]
    assert not list((root / "downloads").glob("*.part"))
    assert not [p for p in root.iterdir() if p.name.startswith(".unpack-")]
    marker = json.loads((root / "downloads/toy.fetched.json").read_text())
    assert marker["sha256"] == _sha(archive) and marker["verified"] is True


def test_bad_checksum_is_rejected_and_nothing_is_unpacked(tmp_path: Path) -> None:
    archive = _tar(tmp_path / "toy.tar.gz", FILES)
    root = tmp_path / "root"
    with pytest.raises(fetch.ChecksumError, match="does not match the expected"):
        fetch.fetch(_source(archive, sha256="0" * 64), root, show_progress=False)
    assert not (root / "ift").exists()
    assert not (root / "downloads/toy.tar.gz").exists()
    assert not (root / "downloads/toy.fetched.json").exists()


def test_unknown_checksum_is_accepted_but_unverified(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "toy.zip", FILES)
    result = fetch.fetch(_source(archive, kind="zip"), tmp_path / "root", show_progress=False)
    assert result.verified is False
    assert result.message == f"unverified: no pinned checksum; computed sha256 {_sha(archive)}"
    assert (tmp_path / "root/ift/toy/sts-dev.csv").read_text() == "c\td\t1.0\n"


def test_second_run_skips_when_present_and_refetches_when_files_vanish(tmp_path: Path) -> None:
    archive = _tar(tmp_path / "toy.tar.gz", FILES)
    source, root, downloader = _source(archive, sha256=_sha(archive)), tmp_path / "root", CountingDownloader()
    fetch.fetch(source, root, downloader=downloader, show_progress=False)
    again = fetch.fetch(source, root, downloader=downloader, show_progress=False)
    assert (again.status, downloader.calls) == ("skipped", 1)
    (root / "ift/toy/sts-dev.csv").unlink()
    redo = fetch.fetch(source, root, downloader=downloader, show_progress=False)
    # the verified archive is still in downloads/: unpacked again without downloading
    assert (redo.status, downloader.calls) == ("fetched", 1)
    assert (root / "ift/toy/sts-dev.csv").is_file()


def test_stale_part_file_is_replaced_when_the_server_cannot_resume(tmp_path: Path) -> None:
    archive = _tar(tmp_path / "toy.tar.gz", FILES)
    root = tmp_path / "root"
    (root / "downloads").mkdir(parents=True)
    (root / "downloads/toy.tar.gz.part").write_bytes(b"garbage from an interrupted run")
    result = fetch.fetch(_source(archive, sha256=_sha(archive)), root, show_progress=False)
    assert result.verified and (root / "downloads/toy.tar.gz").read_bytes() == archive.read_bytes()


def test_from_archive_uses_the_local_file(tmp_path: Path) -> None:
    archive = _tar(tmp_path / "toy.tar.gz", FILES)
    source = replace(_source(archive, sha256=_sha(archive)), urls=("https://unreachable.invalid/toy.tar.gz",))
    downloader = CountingDownloader()
    result = fetch.fetch(source, tmp_path / "root", downloader=downloader, from_archive=archive,
                         show_progress=False)
    assert (result.status, result.verified, downloader.calls) == ("fetched", True, 0)
    assert archive.is_file()


def test_failed_download_names_the_file_and_the_offline_route(tmp_path: Path) -> None:
    source = _source(tmp_path / "absent.tar.gz")
    with pytest.raises(DataMissingError, match="--from-archive"):
        fetch.fetch(source, tmp_path / "root", show_progress=False)


def test_archive_without_the_expected_folder(tmp_path: Path) -> None:
    archive = _tar(tmp_path / "toy.tar.gz", {"other/x.txt": "x"})
    with pytest.raises(DataMissingError, match="lacks 'bench/'"):
        fetch.fetch(_source(archive), tmp_path / "root", show_progress=False)


def test_unsafe_zip_member_is_refused(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "evil.zip", {"../escape.txt": "x", "bench/a.txt": "a"})
    with pytest.raises(InputFormatError, match="escape.txt"):
        fetch.fetch(_source(archive, kind="zip"), tmp_path / "root", show_progress=False)
    assert not (tmp_path / "escape.txt").exists()


def test_corrupt_archive_is_a_clear_error(tmp_path: Path) -> None:
    archive = tmp_path / "toy.tar.gz"
    archive.write_bytes(b"not a tarball")
    with pytest.raises(InputFormatError, match="toy.tar.gz: expected a readable tar.gz archive"):
        fetch.fetch(_source(archive), tmp_path / "root", show_progress=False)


def test_single_file_source(tmp_path: Path) -> None:
    payload = tmp_path / "ori_pqal.json"
    payload.write_text('{"1": {}}', encoding="utf-8")
    source = fetch.Source("qa", (payload.as_uri(),), "ori_pqal.json", "file", None,
                          (("ori_pqal.json", "blurb/pubmedqa/ori_pqal.json"),))
    fetch.fetch(source, tmp_path / "root", show_progress=False)
    assert (tmp_path / "root/blurb/pubmedqa/ori_pqal.json").read_text() == '{"1": {}}'


def test_source_table_is_complete() -> None:
    names = [s.name for s in fetch.SOURCES]
    assert {"blurb-linkbert", "pubmedqa", "stsb", "scierc"} <= set(names)
    for source in fetch.SOURCES:
        assert source.urls and all(u.startswith(("http://", "https://")) for u in source.urls)
        assert source.sha256 is None or len(source.sha256) == 64
        assert source.members
    assert [s.name for s in fetch.resolve_sources("stsb,scierc")] == ["stsb", "scierc"]
    with pytest.raises(KeyError, match="unknown source"):
        fetch.resolve_sources("nope")


def test_cli_from_archive_and_list(tmp_path: Path) -> None:
    archive = _tar(tmp_path / "Stsbenchmark.tar.gz", {"stsbenchmark/sts-test.csv": "x\ty\t2.0\n"})
    app = typer.Typer()

    @app.callback()
    def _root() -> None:
        """Test root."""

    data_cli.register(app)
    runner = CliRunner()
    result = runner.invoke(app, ["data", "fetch", "--root", str(tmp_path / "root"), "--only", "stsb",
                                 "--from-archive", str(archive)])
    assert result.exit_code == 0, result.output
    assert "UNVERIFIED" in result.output and _sha(archive) in result.output
    assert (tmp_path / "root/ift/stsb/sts-test.csv").is_file()
    listing = runner.invoke(app, ["data", "fetch", "--list", "--json"])
    assert {r["name"] for r in json.loads(listing.output)} == {s.name for s in fetch.SOURCES}
    both = runner.invoke(app, ["data", "fetch", "--only", "stsb,scierc", "--from-archive", str(archive)])
    assert both.exit_code != 0
