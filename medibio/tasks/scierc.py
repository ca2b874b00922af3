"""SciERC documents: reading the DyGIE/PURE json, checking it, and cutting it into encoder windows.

The processed SciERC files (Luan et al. 2018, as shipped by DyGIE++, PURE and SciBERT) hold one abstract per
line: ``sentences`` (lists of words), ``ner`` (per sentence, ``[start, end, type]`` with *document-level*
inclusive word offsets), ``relations`` (per sentence, ``[s1, e1, s2, e2, type]``) and ``clusters``
(coreference, lists of ``[start, end]``). Everything downstream uses those global word offsets, so spans,
predictions and metrics speak one coordinate system.

The reader refuses what the models cannot represent, naming file, line, document and what was expected: a
span outside its sentence, an unknown label (when a label set is given), a relation whose arguments are not
entities of that sentence, a coreference mention that crosses sentences, overlaps an entity with different
boundaries or belongs to two clusters. A mention repeated inside one cluster (one case in ``train.json``)
is dropped with a note, since it names the same entity twice.

Encoder windows (:func:`make_windows`) pack whole sentences of a document up to the encoder's length; each
sentence is *core* in exactly one window and the remaining room is filled with the neighbouring sentences'
words as context (PURE's cross-sentence context), so each word gets exactly one representation.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from medibio.core.errors import InputFormatError
from medibio.core.paths import data_root as resolve
from medibio.core.text import json_lines, require_file
from medibio.tasks.spec import Problem, TaskSpec

ENTITY_TYPES = ("Generic", "Material", "Method", "Metric", "OtherScientificTerm", "Task")
RELATION_TYPES = ("COMPARE", "CONJUNCTION", "EVALUATE-FOR", "FEATURE-OF", "HYPONYM-OF", "PART-OF", "USED-FOR")
SPLITS = ("train", "dev", "test")
SPEC = TaskSpec("SciERC", "scierc", Problem.SPAN, ENTITY_TYPES, "scierc", 512, "scierc", "scierc_jsonl",
                source="SciERC processed json (see ../shared/data/scierc/MANIFEST.md)", aliases=("scierc",))

Span = tuple[int, int]  # inclusive word offsets in the document
Entity = tuple[int, int, str]
Relation = tuple[int, int, int, int, str]


@dataclass(frozen=True)
class Document:
    """One abstract with its gold annotations in document-level word offsets."""

    doc_key: str
    sentences: tuple[tuple[str, ...], ...]
    entities: tuple[tuple[Entity, ...], ...]  # per sentence
    relations: tuple[tuple[Relation, ...], ...]  # per sentence
    clusters: tuple[tuple[Span, ...], ...]
    notes: tuple[str, ...] = ()

    @property
    def n_words(self) -> int:
        return sum(len(s) for s in self.sentences)

    def sentence_starts(self) -> list[int]:
        """Document offset of each sentence's first word."""
        starts, offset = [], 0
        for sent in self.sentences:
            starts.append(offset)
            offset += len(sent)
        return starts

    def words(self) -> list[str]:
        return [w for s in self.sentences for w in s]

    def all_entities(self) -> list[Entity]:
        return [e for sent in self.entities for e in sent]

    def all_relations(self) -> list[Relation]:
        return [r for sent in self.relations for r in sent]


def split_path(split: str, data_root: str | Path | None = None) -> Path:
    """``<data root>/scierc/<split>.json``."""
    if split not in SPLITS:
        raise ValueError(f"unknown SciERC split {split!r}; known: {', '.join(SPLITS)}")
    return resolve(data_root) / "scierc" / f"{split}.json"


def _fail(path: Path, line: int, doc: str, expected: str, got: Any) -> InputFormatError:
    return InputFormatError(path, line, f"(document {doc!r}) {expected}", json.dumps(got))


def _span(value: Any, n: int) -> bool:
    return (isinstance(value, (list, tuple)) and len(value) >= 2 and all(isinstance(v, int) for v in value[:2])
            and 0 <= value[0] <= value[1] < n)


def parse_document(raw: Any, path: Path, line: int, entity_types: Sequence[str] | None = ENTITY_TYPES,
                   relation_types: Sequence[str] | None = RELATION_TYPES) -> Document:
    """Check one json object and turn it into a :class:`Document` (errors name file, line, document)."""
    if not isinstance(raw, dict):
        raise InputFormatError(path, line, "a json object per line", json.dumps(raw)[:120])
    doc = str(raw.get("doc_key", f"line {line}"))
    for key in ("sentences", "ner", "relations", "clusters"):
        if not isinstance(raw.get(key), list):
            raise _fail(path, line, doc, f"a list under {key!r}", raw.get(key))
    sentences = raw["sentences"]
    if not sentences or not all(isinstance(s, list) and s and all(isinstance(w, str) for w in s)
                                for s in sentences):
        raise _fail(path, line, doc, "'sentences' as non-empty lists of word strings", sentences[:1])
    n_sent = len(sentences)
    for key in ("ner", "relations"):
        if len(raw[key]) != n_sent:
            raise _fail(path, line, doc, f"one {key!r} list per sentence ({n_sent})", f"{len(raw[key])} lists")
    starts, offset = [], 0
    for s in sentences:
        starts.append(offset)
        offset += len(s)
    n_words = offset
    ents_out: list[tuple[Entity, ...]] = []
    rels_out: list[tuple[Relation, ...]] = []
    entity_spans: dict[Span, int] = {}  # span -> sentence index
    for i, (ner, rels) in enumerate(zip(raw["ner"], raw["relations"], strict=True)):
        lo, hi = starts[i], starts[i] + len(sentences[i]) - 1
        ents: list[Entity] = []
        for ent in ner:
            if not (_span(ent, n_words) and len(ent) == 3 and isinstance(ent[2], str)):
                raise _fail(path, line, doc, f"entity [start, end, type] in sentence {i}", ent)
            if not lo <= ent[0] <= ent[1] <= hi:
                raise _fail(path, line, doc, f"entity inside sentence {i} (words {lo}-{hi})", ent)
            if entity_types is not None and ent[2] not in entity_types:
                raise _fail(path, line, doc, f"an entity type in {', '.join(entity_types)}", ent)
            ents.append((ent[0], ent[1], ent[2]))
            entity_spans[(ent[0], ent[1])] = i
        sent_spans = {(e[0], e[1]) for e in ents}
        rel_out: list[Relation] = []
        for rel in rels:
            if not (isinstance(rel, list) and len(rel) == 5 and all(isinstance(v, int) for v in rel[:4])
                    and isinstance(rel[4], str)):
                raise _fail(path, line, doc, f"relation [s1, e1, s2, e2, type] in sentence {i}", rel)
            if (rel[0], rel[1]) not in sent_spans or (rel[2], rel[3]) not in sent_spans:
                raise _fail(path, line, doc, f"relation arguments that are entities of sentence {i}", rel)
            if relation_types is not None and rel[4] not in relation_types:
                raise _fail(path, line, doc, f"a relation type in {', '.join(relation_types)}", rel)
            rel_out.append((rel[0], rel[1], rel[2], rel[3], rel[4]))
        ents_out.append(tuple(ents))
        rels_out.append(tuple(rel_out))
    clusters: list[tuple[Span, ...]] = []
    owner: dict[Span, int] = {}
    notes: list[str] = []
    sentence_of = _sentence_index(starts, n_words)
    for c, cluster in enumerate(raw["clusters"]):
        if not isinstance(cluster, list) or not cluster:
            raise _fail(path, line, doc, f"cluster {c} as a non-empty list of [start, end]", cluster)
        mentions: list[Span] = []
        for m in cluster:
            if not (_span(m, n_words) and len(m) == 2):
                raise _fail(path, line, doc, f"mention [start, end] within the {n_words} words (cluster {c})", m)
            span = (m[0], m[1])
            if sentence_of[span[0]] != sentence_of[span[1]]:
                raise _fail(path, line, doc, f"mention inside one sentence (cluster {c})", m)
            if span in owner:
                if owner[span] != c:
                    raise _fail(path, line, doc, f"each mention in one cluster (also in cluster {owner[span]})", m)
                notes.append(f"{doc}: mention {list(span)} repeated in cluster {c}; kept once")
                continue
            if span not in entity_spans:
                for s, e in entity_spans:
                    if s <= span[1] and span[0] <= e:
                        raise _fail(path, line, doc, f"mention with the boundaries of the entity it overlaps "
                                                     f"([{s}, {e}], cluster {c})", m)
            owner[span] = c
            mentions.append(span)
        clusters.append(tuple(sorted(mentions)))
    return Document(doc, tuple(tuple(s) for s in sentences), tuple(ents_out), tuple(rels_out), tuple(clusters),
                    tuple(notes))


def _sentence_index(starts: Sequence[int], n_words: int) -> list[int]:
    out = []
    for i, start in enumerate(starts):
        end = starts[i + 1] if i + 1 < len(starts) else n_words
        out.extend([i] * (end - start))
    return out


def read_documents(path: str | Path, entity_types: Sequence[str] | None = ENTITY_TYPES,
                   relation_types: Sequence[str] | None = RELATION_TYPES) -> list[Document]:
    """Every document of a SciERC json-lines file, checked (see the module docstring)."""
    path = require_file(path, "SciERC processed json (see ../shared/data/scierc/MANIFEST.md)")
    return [parse_document(raw, path, n, entity_types, relation_types)
            for n, _, raw in json_lines(path, "a SciERC document as one JSON object")]


def load_split(split: str, data_root: str | Path | None = None) -> list[Document]:
    return read_documents(split_path(split, data_root))


def enumerate_spans(doc: Document, max_width: int) -> list[tuple[int, int, int]]:
    """Every ``(start, end, sentence)`` of at most ``max_width`` words that stays inside one sentence, in
    document order (DyGIE++ and PURE enumerate exactly these candidates)."""
    out = []
    for i, start in enumerate(doc.sentence_starts()):
        n = len(doc.sentences[i])
        for s in range(start, start + n):
            for e in range(s, min(s + max_width, start + n)):
                out.append((s, e, i))
    return out


@dataclass
class Window:
    """One encoder input: sub-token ids plus, per document word of its core sentences, the first and last
    sub-token position (``None`` where the word was cut off)."""

    input_ids: list[int]
    core_words: range  # document word offsets represented by this window
    word_first: dict[int, int] = field(default_factory=dict)
    word_last: dict[int, int] = field(default_factory=dict)


def _pieces(tokenizer: Any, words: Sequence[str]) -> list[list[int]]:
    encoded = tokenizer(list(words), is_split_into_words=True, add_special_tokens=False)
    pieces: list[list[int]] = [[] for _ in words]
    ids = encoded["input_ids"]
    for pos, w in enumerate(encoded.word_ids()):
        if w is not None:
            pieces[w].append(ids[pos])
    unk = tokenizer.unk_token_id if tokenizer.unk_token_id is not None else 0
    return [p or [unk] for p in pieces]


def make_windows(doc: Document, tokenizer: Any, max_length: int, context: bool = True) -> tuple[list[Window], int]:
    """Pack the document's sentences into windows of at most ``max_length`` sub-tokens (with the special
    tokens); returns the windows and the number of words that did not fit (a sentence longer than a window
    keeps its first words). ``context`` fills the spare room with neighbouring words on both sides."""
    budget = max_length - 2
    pieces = _pieces(tokenizer, doc.words())
    starts = doc.sentence_starts() + [doc.n_words]
    groups: list[tuple[int, int]] = []  # word ranges of core sentences
    cur_start, cur_len = 0, 0
    for i in range(len(doc.sentences)):
        n = sum(len(pieces[w]) for w in range(starts[i], starts[i + 1]))
        if cur_len and cur_len + n > budget:
            groups.append((cur_start, starts[i]))
            cur_start, cur_len = starts[i], 0
        cur_len += n
    groups.append((cur_start, doc.n_words))
    windows, lost = [], 0
    cls = tokenizer.cls_token_id if tokenizer.cls_token_id is not None else tokenizer.bos_token_id
    sep = tokenizer.sep_token_id if tokenizer.sep_token_id is not None else tokenizer.eos_token_id
    for lo, hi in groups:
        core: list[int] = []
        first: dict[int, int] = {}
        last: dict[int, int] = {}
        for w in range(lo, hi):
            if len(core) + len(pieces[w]) > budget:
                lost += hi - w
                break
            first[w] = len(core)
            core.extend(pieces[w])
            last[w] = len(core) - 1
        left: list[int] = []
        right: list[int] = []
        if context:
            room = budget - len(core)
            li, ri = lo - 1, hi
            while room > 0 and (li >= 0 or ri < doc.n_words):
                if ri < doc.n_words and len(pieces[ri]) <= room:
                    right.extend(pieces[ri])
                    room -= len(pieces[ri])
                    ri += 1
                else:
                    ri = doc.n_words
                if li >= 0 and len(pieces[li]) <= room:
                    left[:0] = pieces[li]
                    room -= len(pieces[li])
                    li -= 1
                else:
                    li = -1
        shift = 1 + len(left)
        ids = [cls, *left, *core, *right, sep]
        windows.append(Window(ids, range(lo, hi), {w: p + shift for w, p in first.items()},
                              {w: p + shift for w, p in last.items()}))
    return windows, lost


def label_counts(docs: Iterable[Document]) -> dict[str, int]:
    """Entities, relations, clusters and mentions (for the chapter and the record)."""
    docs = list(docs)
    return {"documents": len(docs), "sentences": sum(len(d.sentences) for d in docs),
            "entities": sum(len(d.all_entities()) for d in docs),
            "relations": sum(len(d.all_relations()) for d in docs),
            "clusters": sum(len(d.clusters) for d in docs),
            "mentions": sum(len(c) for d in docs for c in d.clusters)}
