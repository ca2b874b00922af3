"""Pretraining corpora: documents from the local text collections or from field-subset shards, deduplicated,
split into sentences and packed into fixed-length token blocks.

Everything is a generator, so a corpus larger than memory streams through: documents are read one at a
time (gzip JSONL, plain text, tar members), tokenized in small batches and cut into blocks. For training,
blocks are written once to an on-disk cache (a flat int32 file read through ``numpy.memmap``) so that the
trainer can address "block i of epoch e" directly; that is what makes the data position resumable.

Corpus specs (``--corpus``): a named corpus (see ``NAMED_CORPORA``), a file (``.jsonl``, ``.jsonl.gz``,
``.txt``), a folder of such files (the shards ``medibio fields subset`` writes), or several joined by commas.
The variant picks the text of JSONL records: ``abstract`` (field ``abstract``, else ``text``) or ``fulltext``
(``abstract`` + ``body``/``body_text``, else ``text``).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import re
import tarfile
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from medibio.core.atomic import atomic_open, write_json
from medibio.core.errors import DataMissingError, InputFormatError
from medibio.core.paths import cache_root, data_root

VARIANTS = ("abstract", "fulltext")
CACHE_VERSION = 1
HOW_TO_GET = "the corpora live in the data root under corpora/ (see its MANIFEST.md); set MEDIBIO_DATA"


@dataclass(frozen=True)
class Document:
    """One text unit of the corpus (an abstract, a paper, a paragraph block of a text file)."""

    id: str
    text: str
    source: str


@dataclass
class CorpusStats:
    """What was read: documents kept, exact duplicates dropped, records without text for the variant."""

    documents: int = 0
    duplicates: int = 0
    empty: int = 0
    characters: int = 0
    bytes: int = 0
    truncated: bool = False
    per_source: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# --------------------------------------------------------------------------------------------- readers

def _open_text(path: Path) -> io.TextIOBase:
    if path.name.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8")
    return path.open("r", encoding="utf-8")


def _field_text(value: Any) -> str:
    """Text of a field that is a string, a {"text": ...} object or a list of either (S2ORC body_text)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return _field_text(value.get("text"))
    if isinstance(value, list):
        return "\n".join(t for t in (_field_text(v) for v in value) if t)
    return ""


def record_text(row: dict[str, Any], variant: str) -> str | None:
    """Pick the variant's text from a JSONL record; None when the record has none of the known fields."""
    keys = set(row)
    if variant == "abstract":
        if "abstract" in keys:
            return _field_text(row["abstract"])
        if "text" in keys:
            return _field_text(row["text"])
        return None
    if not keys & {"abstract", "body", "body_text", "text"}:
        return None
    if keys & {"body", "body_text"}:
        parts = [_field_text(row.get("abstract")), _field_text(row.get("body", row.get("body_text")))]
        return "\n".join(p for p in parts if p)
    return _field_text(row.get("text", row.get("abstract")))


def read_jsonl(path: str | Path, variant: str = "abstract") -> Iterator[Document]:
    """Records of a JSONL(.gz) file with an ``id`` and text fields; malformed lines raise with their number."""
    path = Path(path)
    _check_variant(variant)
    with _open_text(path) as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputFormatError(path, lineno, "one JSON object per line", f"{line[:80]!r} ({exc.msg})") from exc
            if not isinstance(row, dict):
                raise InputFormatError(path, lineno, "a JSON object", type(row).__name__)
            text = record_text(row, variant)
            if text is None:
                raise InputFormatError(path, lineno, "a record with 'text', 'abstract' or 'body' field",
                                       ", ".join(sorted(row)))
            rid = row.get("id", row.get("paper_id", f"{path.name}:{lineno}"))
            yield Document(str(rid), text, path.name)


def read_text_file(path: str | Path) -> Iterator[Document]:
    """A plain text file: documents are separated by blank lines (the BERT pretraining-data convention)."""
    path = Path(path)
    block: list[str] = []
    start = 1
    with _open_text(path) as fh:
        for lineno, line in enumerate(fh, start=1):
            if line.strip():
                if not block:
                    start = lineno
                block.append(line.strip())
            elif block:
                yield Document(f"{path.name}:{start}", "\n".join(block), path.name)
                block = []
    if block:
        yield Document(f"{path.name}:{start}", "\n".join(block), path.name)


SCITLDR_SPLITS = ("train", "dev", "test")


def read_scitldr(folder: Path) -> Iterator[Document]:
    """SciTLDR-A: one abstract (a list of sentences under ``source``) per line, in train/dev/test."""
    for split in SCITLDR_SPLITS:
        path = folder / f"{split}.jsonl"
        with path.open(encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                    sentences = row["source"]
                except (json.JSONDecodeError, KeyError, TypeError) as exc:
                    raise InputFormatError(path, lineno, "a SciTLDR record with a 'source' list", line[:80]) from exc
                yield Document(str(row.get("paper_id", f"{split}:{lineno}")), " ".join(sentences), "scitldr")


def read_scisummnet(archive: Path, variant: str) -> Iterator[Document]:
    """ScisummNet tarball: each ``Reference_XML/<id>.xml`` is a paper of ``<S>`` sentences.

    ``abstract`` keeps the sentences under ``<ABSTRACT>``; ``fulltext`` keeps every sentence of the paper.
    """
    with tarfile.open(archive, "r|gz") as tar:
        for member in tar:
            if not (member.isfile() and member.name.endswith(".xml") and "/Reference_XML/" in member.name):
                continue
            raw = tar.extractfile(member).read()  # type: ignore[union-attr]
            try:
                root = ET.fromstring(raw)
            except ET.ParseError as exc:
                raise InputFormatError(f"{archive}!{member.name}", exc.position[0], "well-formed XML",
                                       str(exc)) from exc
            scope = root.find("ABSTRACT") if variant == "abstract" else root
            sentences = [] if scope is None else scope.iter("S")
            text = "\n".join(" ".join(s.itertext()).strip() for s in sentences)
            yield Document(Path(member.name).stem, text, "scisummnet")


def read_unarxive(archive: Path, variant: str) -> Iterator[Document]:
    """unarXive sample tarball: JSONL papers with ``abstract.text`` and ``body_text[].text``."""
    with tarfile.open(archive, "r|gz") as tar:
        for member in tar:
            if not (member.isfile() and member.name.endswith(".jsonl")):
                continue
            fh = tar.extractfile(member)  # a stream-mode member is not seekable: read bytes lines
            for lineno, raw_line in enumerate(fh, start=1):  # type: ignore[arg-type]
                line = raw_line.decode("utf-8")
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise InputFormatError(f"{archive}!{member.name}", lineno, "one JSON object per line",
                                           line[:80]) from exc
                text = record_text(row, variant) or ""
                yield Document(str(row.get("paper_id", lineno)), text, "unarxive")


# ------------------------------------------------------------------------------------- named corpora

def _corpora_dir(root: Path | None) -> Path:
    return (root or data_root()) / "corpora"


def _need(path: Path) -> Path:
    if not path.exists():
        raise DataMissingError(path, HOW_TO_GET)
    return path


SourceFn = Callable[[Path | None], Iterator[Document]]
SCISUMMNET = "clscisumm_scisummnet/scisummnet_2019_reference_xml_and_summaries.tar.gz"
UNARXIVE = "unarxive_sample/unarXive_data_sample.tar.gz"

@dataclass(frozen=True)
class NamedSource:
    """A named source: its file or folder under ``<data root>/corpora/``, how it is read, and for a folder
    the files the reader opens (what a run's identity fingerprints)."""

    path: str
    read: Callable[[Path], Iterator[Document]]
    members: tuple[str, ...] = ()

    def files(self, root: Path | None) -> list[Path]:
        where = _corpora_dir(root) / self.path
        return [where / m for m in self.members] if self.members else [where]


SOURCE_FILES: dict[str, NamedSource] = {
    "sumpubmed-abstracts": NamedSource("sumpubmed/abstracts.jsonl.gz", lambda p: read_jsonl(p, "abstract")),
    "sumpubmed-fulltext": NamedSource("sumpubmed/fulltext_subset.jsonl.gz", lambda p: read_jsonl(p, "fulltext")),
    "scitldr": NamedSource("scitldr_abstracts", read_scitldr, tuple(f"{s}.jsonl" for s in SCITLDR_SPLITS)),
    "scisummnet-abstracts": NamedSource(SCISUMMNET, lambda p: read_scisummnet(p, "abstract")),
    "scisummnet-fulltext": NamedSource(SCISUMMNET, lambda p: read_scisummnet(p, "fulltext")),
    "unarxive-abstracts": NamedSource(UNARXIVE, lambda p: read_unarxive(p, "abstract")),
    "unarxive-fulltext": NamedSource(UNARXIVE, lambda p: read_unarxive(p, "fulltext")),
}


def _named_source(name: str) -> SourceFn:
    source = SOURCE_FILES[name]
    return lambda root: source.read(_need(_corpora_dir(root) / source.path))


NAMED_SOURCES: dict[str, SourceFn] = {name: _named_source(name) for name in SOURCE_FILES}

# Mixtures used by the Table 5 experiments; sources are interleaved document by document.
NAMED_CORPORA: dict[str, tuple[str, ...]] = {
    "biomed-abstracts": ("sumpubmed-abstracts",),
    "biomed-fulltext": ("sumpubmed-fulltext",),
    "cs-abstracts": ("scitldr", "scisummnet-abstracts", "unarxive-abstracts"),
    # SciTLDR has no full text here, so its abstracts join the full-text mixture.
    "cs-fulltext": ("scisummnet-fulltext", "unarxive-fulltext", "scitldr"),
    "cs": ("scisummnet-fulltext", "unarxive-fulltext", "scitldr"),
    **{name: (name,) for name in NAMED_SOURCES},
}


def _check_variant(variant: str) -> None:
    if variant not in VARIANTS:
        raise ValueError(f"corpus variant must be one of {VARIANTS}, got {variant!r}")


def _path_documents(path: Path, variant: str) -> Iterator[Document]:
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file() and _is_corpus_file(p))
        if not files:
            raise DataMissingError(path, "expected .jsonl, .jsonl.gz or .txt files in the folder")
        for f in files:
            yield from _path_documents(f, variant)
    elif path.name.endswith((".jsonl", ".jsonl.gz", ".json.gz")):
        yield from read_jsonl(path, variant)
    elif path.name.endswith((".txt", ".txt.gz")):
        yield from read_text_file(path)
    else:
        raise InputFormatError(path, None, "a .jsonl, .jsonl.gz or .txt file (or a folder of them)", path.suffix)


def _is_corpus_file(p: Path) -> bool:
    return p.name.endswith((".jsonl", ".jsonl.gz", ".json.gz", ".txt", ".txt.gz"))


def source_iterators(spec: str, variant: str = "abstract", root: str | Path | None = None
                     ) -> list[Iterator[Document]]:
    """One document iterator per source named in ``spec`` (comma-separated names or paths)."""
    _check_variant(variant)
    base = Path(root) if root else None
    iters: list[Iterator[Document]] = []
    for part in (p.strip() for p in spec.split(",") if p.strip()):
        if part in NAMED_CORPORA:
            iters.extend(NAMED_SOURCES[s](base) for s in NAMED_CORPORA[part])
        else:
            path = Path(part).expanduser()
            if not path.exists():
                raise DataMissingError(path, f"not a named corpus ({', '.join(NAMED_CORPORA)}) nor an existing "
                                             "file or folder")
            iters.append(_path_documents(path, variant))
    if not iters:
        raise ValueError("empty corpus spec")
    return iters


def _files_under(path: Path) -> list[Path]:
    """A corpus file, or the corpus files of a folder (a missing path stands for itself)."""
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.is_file() and _is_corpus_file(p))
    return [path]


def corpus_files(spec: str, root: str | Path | None = None) -> list[Path]:
    """The files a corpus spec reads (named sources under the data root, given files, folders' corpus files):
    what a pretraining run's identity fingerprints. Missing ones are listed too (they fingerprint as absent)."""
    base = Path(root) if root else None
    files: list[Path] = []
    for part in (p.strip() for p in spec.split(",") if p.strip()):
        if part in NAMED_CORPORA:
            for source in NAMED_CORPORA[part]:
                files += SOURCE_FILES[source].files(base)
        else:
            files += _files_under(Path(part).expanduser())
    return sorted(set(files))


def _interleave(iters: list[Iterator[Document]]) -> Iterator[Document]:
    """Round-robin over sources so that a size cap still samples every source of a mixture."""
    active = list(iters)
    while active:
        for it in list(active):
            try:
                yield next(it)
            except StopIteration:
                active.remove(it)


def _normalised_hash(text: str) -> bytes:
    return hashlib.blake2b(" ".join(text.lower().split()).encode("utf-8"), digest_size=12).digest()


def iter_documents(spec: str, variant: str = "abstract", root: str | Path | None = None, dedup: bool = True,
                   max_mb: float | None = None, stats: CorpusStats | None = None) -> Iterator[Document]:
    """Stream the documents of a corpus spec: interleaved sources, exact-duplicate removal (hash of the
    whitespace/case-normalised text), records without text counted in ``stats.empty``, an optional cap."""
    stats = stats if stats is not None else CorpusStats()
    seen: set[bytes] = set()
    limit = None if max_mb is None else int(max_mb * 1_000_000)
    for doc in _interleave(source_iterators(spec, variant, root)):
        if not doc.text.strip():
            stats.empty += 1
            continue
        if dedup:
            digest = _normalised_hash(doc.text)
            if digest in seen:
                stats.duplicates += 1
                continue
            seen.add(digest)
        size = len(doc.text.encode("utf-8"))
        stats.documents += 1
        stats.characters += len(doc.text)
        stats.bytes += size
        stats.per_source[doc.source] = stats.per_source.get(doc.source, 0) + 1
        yield doc
        if limit is not None and stats.bytes >= limit:
            stats.truncated = True
            return


# ------------------------------------------------------------------------------ sentences and blocks

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")


def split_sentences(text: str) -> list[str]:
    """Sentences of a document: lines, then full stops/question/exclamation marks followed by space.

    Deliberately simple (the SumPubMed text is lower-cased, so capitalisation cannot be used); the
    sentences are the unit that is tokenized and packed, not a linguistic claim.
    """
    out: list[str] = []
    for line in text.splitlines():
        out.extend(s.strip() for s in _SENTENCE_END.split(line) if s.strip())
    return out


def iter_sentences(docs: Iterable[Document]) -> Iterator[str]:
    """Every sentence of every document (the input of vocabulary training)."""
    for doc in docs:
        yield from split_sentences(doc.text)


def iter_blocks(docs: Iterable[Document], tokenizer: Any, block_size: int, docs_per_batch: int = 64
                ) -> Iterator[list[int]]:
    """Pack sentences into blocks of exactly ``block_size`` ids: ``[CLS] tokens... [SEP]``.

    Sentences are concatenated in order (documents separated by ``[SEP]``) and the stream is cut every
    ``block_size - 2`` tokens, so no block is padded; the last incomplete block is dropped.
    """
    if block_size < 8:
        raise ValueError(f"block_size must be at least 8, got {block_size}")
    cls_id, sep_id = tokenizer.cls_token_id, tokenizer.sep_token_id
    if cls_id is None or sep_id is None:
        raise ValueError("the tokenizer needs [CLS] and [SEP] tokens to build MLM blocks")
    body = block_size - 2
    buffer: list[int] = []
    batch: list[Document] = []

    def flush(batch_docs: list[Document]) -> Iterator[list[int]]:
        sentences: list[str] = []
        owners: list[int] = []
        for i, d in enumerate(batch_docs):
            parts = split_sentences(d.text)
            sentences.extend(parts)
            owners.extend([i] * len(parts))
        if not sentences:
            return
        encoded = tokenizer(sentences, add_special_tokens=False)["input_ids"]
        for k, ids in enumerate(encoded):
            buffer.extend(ids)
            if k + 1 == len(encoded) or owners[k + 1] != owners[k]:
                buffer.append(sep_id)  # document boundary
            while len(buffer) >= body:
                yield [cls_id, *buffer[:body], sep_id]
                del buffer[:body]

    for doc in docs:
        batch.append(doc)
        if len(batch) >= docs_per_batch:
            yield from flush(batch)
            batch = []
    if batch:
        yield from flush(batch)


def as_iterable_dataset(spec: str, tokenizer: Any, block_size: int, variant: str = "abstract",
                        root: str | Path | None = None, max_mb: float | None = None):
    """A ``datasets.IterableDataset`` of ``{"input_ids": block}`` that never holds the corpus in memory."""
    from datasets import IterableDataset

    def gen():
        for block in iter_blocks(iter_documents(spec, variant, root, max_mb=max_mb), tokenizer, block_size):
            yield {"input_ids": block}

    return IterableDataset.from_generator(gen)


# ---------------------------------------------------------------------------------------- block cache

class BlockCache:
    """Token blocks on disk (``blocks.int32``, shape ``[n, block_size]``) plus ``meta.json``."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        meta_path = self.folder / "meta.json"
        if not meta_path.exists():
            raise DataMissingError(meta_path, "build the cache with medibio.pretrain.corpus.build_block_cache")
        self.meta: dict[str, Any] = json.loads(meta_path.read_text(encoding="utf-8"))
        self.block_size = int(self.meta["block_size"])
        n = int(self.meta["blocks"])
        if n == 0:
            raise ValueError(f"{self.folder}: the corpus produced no complete block of {self.block_size} tokens")
        self.blocks = np.memmap(self.folder / "blocks.int32", dtype=np.int32, mode="r", shape=(n, self.block_size))

    def __len__(self) -> int:
        return self.blocks.shape[0]

    def __getitem__(self, index):
        return self.blocks[index]


def tokenizer_fingerprint(tokenizer: Any) -> str:
    """Stable identity of a tokenizer's vocabulary (cache key: same text + same vocabulary = same blocks)."""
    vocab = sorted(tokenizer.get_vocab().items())
    payload = json.dumps([type(tokenizer).__name__, vocab], ensure_ascii=False).encode("utf-8")
    return hashlib.sha1(payload).hexdigest()[:16]


def build_block_cache(docs: Iterable[Document], tokenizer: Any, block_size: int, folder: str | Path,
                      stats: CorpusStats | None = None, info: dict[str, Any] | None = None,
                      chunk_blocks: int = 2048) -> BlockCache:
    """Stream blocks to ``folder/blocks.int32`` (atomic), then write ``meta.json`` (written last = complete)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    n = 0
    pending: list[list[int]] = []
    with atomic_open(folder / "blocks.int32", "wb") as fh:
        for block in iter_blocks(docs, tokenizer, block_size):
            pending.append(block)
            if len(pending) >= chunk_blocks:
                fh.write(np.asarray(pending, dtype=np.int32).tobytes())
                n += len(pending)
                pending = []
        if pending:
            fh.write(np.asarray(pending, dtype=np.int32).tobytes())
            n += len(pending)
    meta = {"version": CACHE_VERSION, "blocks": n, "block_size": block_size, "tokens": n * block_size,
            "stats": stats.to_dict() if stats else None, **(info or {})}
    write_json(folder / "meta.json", meta)
    return BlockCache(folder)


def cached_blocks(spec: str, tokenizer: Any, block_size: int, variant: str = "abstract",
                  root: str | Path | None = None, max_mb: float | None = None, dedup: bool = True,
                  cache_dir: str | Path | None = None, cache: str | Path | None = None) -> BlockCache:
    """The block cache of (corpus, variant, cap, tokenizer, block size), built on first use in ``cache_dir``
    (default: a folder under the ``cache`` root named by those)."""
    fingerprint = tokenizer_fingerprint(tokenizer)
    resolved_root = str(Path(root).resolve()) if root else str(data_root(must_exist=False))
    key_src = json.dumps([CACHE_VERSION, spec, variant, resolved_root, max_mb, dedup, fingerprint, block_size])
    key = hashlib.sha1(key_src.encode()).hexdigest()[:16]
    folder = Path(cache_dir) if cache_dir else cache_root(cache) / "pretrain-blocks" / key
    if (folder / "meta.json").exists():
        return BlockCache(folder)
    stats = CorpusStats()
    docs = iter_documents(spec, variant, root, dedup=dedup, max_mb=max_mb, stats=stats)
    info = {"corpus": spec, "variant": variant, "max_mb": max_mb, "dedup": dedup, "tokenizer": fingerprint}
    return build_block_cache(docs, tokenizer, block_size, folder, stats=stats, info=info)
