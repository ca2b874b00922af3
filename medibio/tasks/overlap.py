"""Split disjointness by content: the same example, as normalised text, in two splits of one dataset.

Ids catch a document placed in two splits under its own id (:func:`medibio.tasks.loaders.split_overlaps`);
they miss an example copied under another id, and datasets whose ids are positions (GAD, the NER sets)
have no id to compare at all. Here every example is reduced to its content — the sentence with its entity
markers, the sentence pair, the question with its context, the words of an NER sentence — case-folded with
its whitespace collapsed, and two splits overlap where one content occurs in both.

BLURB's own files overlap this way (short sentences such as a section heading repeated across the NER
splits, a few marked sentences in two of GAD's or DDI's splits): measured on the official files, each such
overlap is documented in :data:`KNOWN_CONTENT_OVERLAPS` by the number of shared contents and a digest of
them, so the official files train as they are, while any other overlap (a file edited, splits mixed up, test
examples pasted into train) is refused with file and line until the user says it is meant
(``--allow-overlap``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

from medibio.core.errors import InputFormatError

SPLITS: tuple[str, ...] = ("train", "dev", "test")

# (dataset, split, later split) -> (shared contents, digest of them) in BLURB's official files, as measured
# with :func:`content_overlaps` on the data root of ../shared/data (see docs/data.md). An overlap that
# matches both is BLURB's own; any other is refused (or, allowed, noted in the run record).
# What they are: NER sentences such as "1 .", "methods .", "a case report ." or "( abstract truncated at 250
# words )", and in JNLPBA also the sentences of its 10 documented shared abstracts; GAD's, DDI's and ChemProt's
# sentences with the same entity markers, repeated by the sources ("@drug$ antagonize the effects of @drug$.").
KNOWN_CONTENT_OVERLAPS: dict[tuple[str, str, str], tuple[int, str]] = {
    ("BC5-chem", "train", "dev"): (7, "f77927bfe65431b3"),  # 19 dev examples
    ("BC5-chem", "train", "test"): (8, "359ebaf24bb76a5e"),  # 16 test examples
    ("BC5-chem", "dev", "test"): (10, "40390e12b3fd6d82"),  # 18 test examples
    ("BC5-disease", "train", "dev"): (7, "f77927bfe65431b3"),
    ("BC5-disease", "train", "test"): (8, "359ebaf24bb76a5e"),
    ("BC5-disease", "dev", "test"): (10, "40390e12b3fd6d82"),
    ("NCBI-disease", "train", "dev"): (5, "50f916c56a66eb94"),
    ("NCBI-disease", "train", "test"): (1, "651417d7af87a3c9"),
    ("NCBI-disease", "dev", "test"): (1, "2cc4d82151582f16"),
    ("BC2GM", "train", "dev"): (12, "7d271524d2ade3fd"),  # 22 dev examples
    ("BC2GM", "train", "test"): (34, "b4b92491a57c7c7f"),  # 54 test examples
    ("BC2GM", "dev", "test"): (15, "7a8259054e4c189f"),  # 24 test examples
    ("JNLPBA", "train", "dev"): (2, "7b5180189abf964f"),  # 6 dev examples
    ("JNLPBA", "train", "test"): (104, "942fc99b97062505"),  # 109 test examples
    ("JNLPBA", "dev", "test"): (2, "7b5180189abf964f"),
    ("EBM-PICO", "dev", "test"): (2, "838baf67b3ad9ee0"),  # 3 test examples
    ("ChemProt", "train", "dev"): (1, "2540ce9f0f83ffe5"),
    ("ChemProt", "train", "test"): (5, "9222835af0dd89b5"),
    ("ChemProt", "dev", "test"): (3, "29d7395fb2af9e0f"),
    ("DDI", "train", "dev"): (79, "f2d770379686ae74"),  # 81 dev examples
    ("DDI", "train", "test"): (93, "d0ff4cd4cec27eb4"),  # 101 test examples
    ("GAD", "train", "dev"): (39, "260554425bdd79ce"),
    ("GAD", "train", "test"): (5, "53cd4f86e3f2bc3d"),  # 8 test examples
}

ALLOW_HINT = "pass --allow-overlap to train on it anyway"


def content_key(row: Mapping[str, Any]) -> str:
    """The normalised content of an example: its words or its text(s), case-folded, whitespace collapsed."""
    if "tokens" in row:
        text = " ".join(row["tokens"])
    else:
        text = str(row.get("text", "")) + (f" \t {row['text_pair']}" if row.get("text_pair") else "")
    return " ".join(text.casefold().split())


def digest(keys: Sequence[str] | set[str]) -> str:
    """A short digest of a set of contents (what :data:`KNOWN_CONTENT_OVERLAPS` records)."""
    return hashlib.sha256("\n".join(sorted(keys)).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class ContentOverlap:
    """Examples of one split whose content is also in an earlier split of the same dataset."""

    dataset: str
    splits: tuple[str, str]
    files: tuple[Path, Path]
    shared: dict[str, tuple[int, int]]  # content -> (its first line in the earlier split, in the later one)
    examples: int  # examples of the later split with such a content
    known: bool = False  # BLURB's own overlap (KNOWN_CONTENT_OVERLAPS)

    @property
    def digest(self) -> str:
        return digest(set(self.shared))

    def describe(self) -> str:
        """One line: how many, and where the first few are (file:line in both splits)."""
        first, second = self.splits
        shown = ", ".join(f"{self.files[1].name}:{b} = {self.files[0].name}:{a}"
                          for a, b in sorted(self.shared.values(), key=lambda lines: lines[1])[:3])
        more = f" and {len(self.shared) - 3} more" if len(self.shared) > 3 else ""
        return (f"{self.examples} {second} example(s) repeat {len(self.shared)} {first} example(s) by content "
                f"({shown}{more})")

    def error(self) -> InputFormatError:
        """The error naming the first repeated example with its line in both files."""
        key, (a, b) = min(self.shared.items(), key=lambda item: item[1][1])
        more = f"; {self.describe()}" if len(self.shared) > 1 else ""
        return InputFormatError(self.files[1], b, f"no example of the {self.splits[0]} split again (same "
                                f"normalised text); this one is also at {self.files[0]}:{a}{more}; {ALLOW_HINT}",
                                key)


def content_overlaps(dataset: str, rows: Mapping[str, Sequence[Mapping[str, Any]]],
                     file_of: Callable[[str], Path]) -> list[ContentOverlap]:
    """Every pair of the given splits (train/dev/test order) that shares a content; ``rows`` carry ``line``
    (the loaders' rows), ``file_of(split)`` is the file those lines are in."""
    keyed: dict[str, dict[str, list[int]]] = {}
    for split in (s for s in SPLITS if s in rows):
        lines: dict[str, list[int]] = {}
        for row in rows[split]:
            lines.setdefault(content_key(row), []).append(int(row["line"]))
        keyed[split] = lines
    out = []
    for first, second in combinations(keyed, 2):
        shared = {k: (keyed[first][k][0], lines[0]) for k, lines in keyed[second].items() if k in keyed[first]}
        if not shared:
            continue
        examples = sum(len(keyed[second][k]) for k in shared)
        overlap = ContentOverlap(dataset, (first, second), (file_of(first), file_of(second)), shared, examples)
        known = KNOWN_CONTENT_OVERLAPS.get((dataset, first, second)) == (len(shared), overlap.digest)
        out.append(ContentOverlap(dataset, (first, second), overlap.files, shared, examples, known))
    return out
