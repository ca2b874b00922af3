"""Download the public data sources into a data root, verify their checksums and unpack them in place.

For users with internet access (this project's build machine has none). Each :class:`Source` names its
URL(s), the archive's expected sha256 and where its members go under the data root. Where the true
checksum could not be established offline, ``sha256`` is ``None``: the archive is then accepted but
reported as *unverified* together with its computed sha256, so a user can pin it. A known checksum must
match, or the download is deleted and rejected.

Downloads go to ``<root>/downloads/<file>.part`` and are renamed only when complete (a ``.part`` left by an
interrupted run is resumed with an HTTP range request where the server allows it). A completed source
leaves ``<root>/downloads/<name>.fetched.json``; a later run skips it while its files are still there.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tarfile
import tempfile
import urllib.request
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from tqdm.auto import tqdm

from medibio.core import atomic
from medibio.core.errors import DataMissingError, InputFormatError, MedibioError, UnknownNameError

# A downloader writes the body of ``url`` to ``dest`` (appending when resuming is possible) and reports
# progress through ``progress(n_bytes)``; injectable so tests can run without a network.
Downloader = Callable[[str, Path, Callable[[int], None]], None]

CHUNK = 1 << 20


class ChecksumError(MedibioError):
    """A downloaded or given archive does not have the sha256 its source table entry pins."""


@dataclass(frozen=True)
class Source:
    """One downloadable source: where it lives, what it must hash to, and where its content goes."""

    name: str
    urls: tuple[str, ...]  # tried in order (mirrors)
    filename: str  # name of the downloaded file under <root>/downloads
    kind: str  # "zip", "tar.gz" or "file" (a single file copied as is)
    sha256: str | None  # of the downloaded file; None = not known offline (reported as unverified)
    members: tuple[tuple[str, str], ...]  # (path prefix inside the archive, destination under the root)
    description: str = ""
    note: str = ""

    def destinations(self, root: Path) -> list[Path]:
        return [root / dest for _, dest in self.members]


SOURCES: tuple[Source, ...] = (
    Source(
        "blurb-linkbert", ("https://nlp.stanford.edu/projects/myasu/LinkBERT/data.zip",), "linkbert_data.zip",
        "zip", None, (("data/", "downloads/linkbert/data/"),),
        "BLURB preprocessed by the LinkBERT authors (also MRQA, MedQA, MMLU)",
        "Hugging Face JSON layout (data/tokcls, data/seqcls, ...), not the data-generation TSV layout that "
        "`medibio.tasks.loaders` reads; kept under downloads/linkbert for conversion or comparison",
    ),
    Source(
        "pubmedqa", ("https://raw.githubusercontent.com/pubmedqa/pubmedqa/master/data/ori_pqal.json",),
        "ori_pqal.json", "file", None, (("ori_pqal.json", "blurb/pubmedqa/ori_pqal.json"),),
        "PubMedQA expert-labelled set (1000 questions)",
        "BLURB's split id lists (blurb/pubmedqa/indexing/*_pmid.tsv) come from BLURB's data generation",
    ),
    Source(
        "pubmedqa-test-truth",
        ("https://raw.githubusercontent.com/pubmedqa/pubmedqa/master/data/test_ground_truth.json",),
        "test_ground_truth.json", "file", None,
        (("test_ground_truth.json", "blurb/pubmedqa/test_ground_truth.json"),),
        "PubMedQA official test answers (500)",
    ),
    Source(
        "stsb", ("http://ixa2.si.ehu.eus/stswiki/images/4/48/Stsbenchmark.tar.gz",), "Stsbenchmark.tar.gz",
        "tar.gz", None, (("stsbenchmark/", "ift/stsb/"),),
        "STS Benchmark (source of GLUE STS-B) for intermediate fine-tuning",
        "GLUE's STS-B.zip (https://dl.fbaipublicfiles.com/glue/data/STS-B.zip) holds the same pairs in "
        "another layout and hides test scores; this tarball is what ift/stsb holds",
    ),
    Source(
        "scierc", ("http://nlp.cs.washington.edu/sciIE/data/sciERC_processed.tar.gz",),
        "sciERC_processed.tar.gz", "tar.gz", None, (("processed_data/json/", "scierc/"),),
        "SciERC processed JSON (350/50/100 abstracts)",
    ),
)


@dataclass
class FetchResult:
    """What happened to one source."""

    name: str
    status: str  # fetched | skipped
    archive: str
    sha256: str
    verified: bool  # True when a pinned checksum matched; False when none is pinned
    files: list[str] = field(default_factory=list)
    message: str = ""


def get_source(name: str) -> Source:
    for source in SOURCES:
        if source.name.lower() == name.lower():
            return source
    raise UnknownNameError("source", name, [s.name for s in SOURCES])


def resolve_sources(only: str | list[str] | None) -> list[Source]:
    """``None``/``"all"`` -> every source; else a comma list or list of source names."""
    if only is None or only == "all":
        return list(SOURCES)
    items = only.split(",") if isinstance(only, str) else only
    return [get_source(i.strip()) for i in items if i.strip()]


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def urllib_download(url: str, dest: Path, progress: Callable[[int], None]) -> None:
    """Stream ``url`` into ``dest``; resume a partial file when the server answers a range request."""
    start = dest.stat().st_size if dest.exists() else 0
    request = urllib.request.Request(url, headers={"User-Agent": "medibio-fetch"})
    if start:
        request.add_header("Range", f"bytes={start}-")
    with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310 (URLs come from SOURCES)
        resumed = start > 0 and getattr(response, "status", None) == 206
        with dest.open("ab" if resumed else "wb") as fh:
            if resumed:
                progress(start)
            for chunk in iter(lambda: response.read(CHUNK), b""):
                fh.write(chunk)
                progress(len(chunk))


def _tqdm_progress(label: str) -> tuple[Callable[[int], None], Callable[[], None]]:
    bar = tqdm(desc=label, unit="B", unit_scale=True, unit_divisor=1024, leave=False)
    return bar.update, bar.close


def download(source: Source, downloads: Path, downloader: Downloader = urllib_download,
             show_progress: bool = True) -> Path:
    """Download ``source`` to ``downloads/<filename>`` through a ``.part`` file (tries each mirror)."""
    target = downloads / source.filename
    part = target.with_name(target.name + ".part")
    downloads.mkdir(parents=True, exist_ok=True)
    errors: list[str] = []
    for url in source.urls:
        update, close = _tqdm_progress(source.name) if show_progress else (lambda n: None, lambda: None)
        try:
            downloader(url, part, update)
        except OSError as exc:
            errors.append(f"{url}: {exc}")
            continue
        finally:
            close()
        os.replace(part, target)
        return target
    raise DataMissingError(target, "download failed (" + "; ".join(errors) + "); download it by hand and "
                           f"run `medibio data fetch --only {source.name} --from-archive FILE`")


def verify(source: Source, archive: Path) -> tuple[str, bool]:
    """Return (sha256, verified); raise :class:`ChecksumError` when a pinned checksum does not match."""
    digest = sha256_file(archive)
    if source.sha256 is None:
        return digest, False
    if digest != source.sha256.lower():
        raise ChecksumError(f"{archive}: sha256 {digest} does not match the expected {source.sha256} for "
                            f"source {source.name!r}; the file was rejected")
    return digest, True


def unpack(source: Source, archive: Path, root: Path) -> list[Path]:
    """Extract the source's members into their destinations under ``root``; returns the files written.

    Extraction happens in a scratch folder next to the destinations and files are moved into place one
    rename each, so an interrupted unpack never leaves a half-written file under a final name.
    """
    root.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    with tempfile.TemporaryDirectory(prefix=f".unpack-{source.name}-", dir=root) as scratch:
        scratch_dir = Path(scratch)
        if source.kind == "file":
            shutil.copyfile(archive, scratch_dir / source.filename)
            names = [source.filename]
        elif source.kind == "zip":
            with zipfile.ZipFile(archive) as zf:
                names = [n for n in zf.namelist() if not n.endswith("/")]
                for n in names:
                    _safe_member(archive, n)
                zf.extractall(scratch_dir, members=names)
        elif source.kind == "tar.gz":
            with tarfile.open(archive, "r:gz") as tf:
                members = [m for m in tf.getmembers() if m.isfile()]
                names = [m.name for m in members]
                try:
                    tf.extractall(scratch_dir, members=members, filter="data")
                except tarfile.FilterError as exc:
                    raise InputFormatError(archive, None, "safe member paths inside the archive",
                                           str(exc)) from None
        else:
            raise ValueError(f"unknown archive kind {source.kind!r} for {source.name}")
        for prefix, dest in source.members:
            matched = [n for n in names if _strip(n) == prefix.rstrip("/") or _strip(n).startswith(prefix)]
            if not matched:
                raise DataMissingError(archive / prefix, f"the archive of {source.name!r} lacks {prefix!r}; "
                                       "the upstream layout may have changed")
            for n in matched:
                relative = _strip(n)[len(prefix):] if prefix.endswith("/") else ""
                final = root / dest / relative if relative else root / dest
                final.parent.mkdir(parents=True, exist_ok=True)
                os.replace(scratch_dir / n, final)
                written.append(final)
    return written


def fetch(source: Source, root: Path, downloader: Downloader = urllib_download,
          from_archive: Path | None = None, force: bool = False, show_progress: bool = True) -> FetchResult:
    """Download (or take ``from_archive``), verify and unpack one source; skip it when already done."""
    downloads = root / "downloads"
    marker = downloads / f"{source.name}.fetched.json"
    if not force and from_archive is None and _already_done(source, marker, root):
        done = _read_marker(marker)
        return FetchResult(source.name, "skipped", done.get("archive", ""), done.get("sha256", ""),
                           bool(done.get("verified")), done.get("files", []), "already present")
    if from_archive is not None:
        archive = Path(from_archive)
        if not archive.is_file():
            raise DataMissingError(archive, f"a local copy of {source.urls[0]}")
    else:
        archive = downloads / source.filename
        cached_ok = archive.is_file() and source.sha256 is not None and sha256_file(archive) == source.sha256
        if force or not cached_ok:
            archive = download(source, downloads, downloader, show_progress)
    try:
        digest, verified = verify(source, archive)
    except ChecksumError:
        if from_archive is None:
            archive.unlink(missing_ok=True)
        raise
    try:
        files = unpack(source, archive, root)
    except (zipfile.BadZipFile, tarfile.ReadError, EOFError) as exc:
        raise InputFormatError(archive, None, f"a readable {source.kind} archive", str(exc)) from None
    result = FetchResult(source.name, "fetched", str(archive), digest, verified, [str(f) for f in files],
                         "" if verified else f"unverified: no pinned checksum; computed sha256 {digest}")
    atomic.write_json(marker, {"name": source.name, "archive": str(archive), "sha256": digest,
                               "verified": verified, "files": result.files})
    return result


def _already_done(source: Source, marker: Path, root: Path) -> bool:
    if not marker.is_file():
        return False
    done = _read_marker(marker)
    pinned_ok = source.sha256 is None or done.get("sha256") == source.sha256
    return pinned_ok and bool(done.get("files")) and all(Path(f).exists() for f in done["files"]) and all(
        d.exists() for d in source.destinations(root))


def _read_marker(marker: Path) -> dict:
    try:
        return json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}


def _strip(name: str) -> str:
    return name[2:] if name.startswith("./") else name


def _safe_member(archive: Path, name: str) -> None:
    pure = PurePosixPath(name)
    if pure.is_absolute() or ".." in pure.parts:
        raise InputFormatError(archive, None, "member paths inside the archive folder", name)
