"""From the loaders' BLURB schema to model inputs, and from model outputs back to the prediction format.

* Token tasks (NER, PICO): words are split into sub-tokens; the word's tag goes on its *first* sub-token
  and every other position gets -100 (ignored by the loss), as in the BLURB paper. ``word_ids`` remembers
  which position starts which word, so predictions map back to one tag per word. Words cut off by the
  maximum length get the task's outside tag and are counted, so a record can say how often that happened.
* Sequence tasks: ``text`` (and ``text_pair`` when present) truncated to ``max_length``; labels are class
  ids (RE/QA), multi-hot float vectors (HoC) or floats (BIOSSES).

Batches are padded dynamically (to the longest example of the batch); :class:`LengthBucketSampler`
groups examples of similar length so little padding is left, which is what makes the CPU profile feasible.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from medibio.tasks.spec import Problem
from medibio.training.config import CLASS_WEIGHTINGS

MODEL_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def label_list(spec: Any) -> list[str]:
    """The label names of a task, in the order of the model's output units."""
    return list(spec.labels)


def outside_label(spec: Any) -> str:
    """Tag given to words a model never saw (truncated): ``O`` for BIO/PICO, else the negative label."""
    labels = label_list(spec)
    if "O" in labels:
        return "O"
    return spec.negative_label or labels[-1]


def subsample(rows: Any, limit: int | None, seed: int) -> Any:
    """A seeded random subset of at most ``limit`` rows (kept in original order); all rows if no limit.

    ``rows`` is a ``datasets.Dataset`` (subset by ``select``) or a list (SciERC documents).
    """
    if limit is None or len(rows) <= limit:
        return rows
    keep = sorted(random.Random(seed).sample(range(len(rows)), limit))
    return rows.select(keep) if hasattr(rows, "select") else [rows[i] for i in keep]


def cv_splits(full: Mapping[str, Any], fold: int, folds: int, seed: int) -> tuple[dict[str, Any], str]:
    """Fold ``fold`` (1..``folds``) of a k-fold cross-validation over every example of the official splits,
    and the note its record carries. A test set of 20 pairs (BIOSSES) leaves a score's interval 30 points
    wide; scoring each example once, as a test example of its fold, uses all of them. The examples are
    shuffled once with ``seed`` and cut into ``folds`` parts: test is part ``fold``, dev (model selection)
    the next part, train the rest, so every fold's run sees the same proportions."""
    from datasets import concatenate_datasets

    order = [split for split in ("train", "dev", "test") if split in full]
    pooled = concatenate_datasets([full[split] for split in order])
    shuffled = list(range(len(pooled)))
    random.Random(seed).shuffle(shuffled)
    parts = [sorted(shuffled[k::folds]) for k in range(folds)]
    test, dev = parts[fold - 1], parts[fold % folds]
    train = sorted(i for k, part in enumerate(parts) if k not in (fold - 1, fold % folds) for i in part)
    note = (f"fold {fold} of a {folds}-fold cross-validation over the {len(pooled)} examples of "
            f"{' + '.join(order)} (seed {seed}): train {len(train)}, dev {len(dev)}, test {len(test)}; "
            "NOT the official test split")
    return {"train": pooled.select(train), "dev": pooled.select(dev), "test": pooled.select(test)}, note


def capped_splits(full: Mapping[str, Any], caps: Mapping[str, int | None], seed: int, unit: str,
                  profile: str) -> tuple[dict[str, Any], list[str]]:
    """The subsets a run trains, selects and scores on under the profile's caps, and the notes its record
    carries: a dev subset changes model selection, and a capped test set is not an official score."""
    kept = {split: subsample(rows, caps.get(split), seed) for split, rows in full.items()}
    notes = [f"{split}: random subset of {len(kept[split])} of {len(full[split])} {unit} (seed {seed})"
             + ("; model selection and dev scores on this subset" if split == "dev" else "")
             for split in ("train", "dev") if split in full and len(kept[split]) < len(full[split])]
    if "test" in full and len(kept["test"]) < len(full["test"]):
        notes.append(f"test: capped to {len(kept['test'])} of {len(full['test'])} {unit} "
                     f"({profile} profile): NOT an official score")
    return kept, notes


def encode(ds: Any, spec: Any, tokenizer: Any, max_length: int, desc: str = "tokenise") -> Any:
    """Tokenise one split (a ``datasets.Dataset`` in the loaders' schema) with ``.map(batched=True)``.

    The result holds the model inputs, ``labels``, ``length`` (for bucketing), ``index`` (row number, to
    put gathered predictions back in order) and, for token tasks, ``word_ids`` and ``n_words``.
    """
    problem = Problem(spec.problem)
    labels = label_list(spec)
    label_to_id = {name: i for i, name in enumerate(labels)}
    keep = set(MODEL_INPUTS) | {"labels", "length", "index", "word_ids", "n_words"}

    def _check(value: str, row_id: str) -> int:
        try:
            return label_to_id[value]
        except KeyError:
            raise ValueError(f"{spec.name}: example {row_id!r} has label {value!r}, expected one of {labels}") \
                from None

    def token_batch(batch: dict[str, list], indices: list[int]) -> dict[str, list]:
        enc = tokenizer(batch["tokens"], is_split_into_words=True, truncation=True, max_length=max_length)
        out_labels, out_words = [], []
        for k in range(len(batch["tokens"])):
            tags = batch["tags"][k]
            previous = None
            row_labels, row_words = [], []
            for word in enc.word_ids(k):
                if word is None or word == previous:
                    row_labels.append(-100)
                    row_words.append(-1)
                else:
                    row_labels.append(_check(tags[word], batch["id"][k]))
                    row_words.append(word)
                previous = word if word is not None else previous
            out_labels.append(row_labels)
            out_words.append(row_words)
        result = dict(enc)
        result.update(labels=out_labels, word_ids=out_words, n_words=[len(t) for t in batch["tokens"]],
                      length=[len(x) for x in enc["input_ids"]], index=indices)
        return result

    def sequence_batch(batch: dict[str, list], indices: list[int]) -> dict[str, list]:
        pairs = batch.get("text_pair")
        has_pairs = pairs is not None and any(p for p in pairs)
        enc = tokenizer(batch["text"], pairs if has_pairs else None, truncation="longest_first",
                        max_length=max_length)
        if problem is Problem.CLASSIFY:
            out = [_check(str(v), i) for v, i in zip(batch["label"], batch["id"], strict=True)]
        elif problem is Problem.MULTILABEL:
            out = []
            for values, row_id in zip(batch["label"], batch["id"], strict=True):
                vec = [0.0] * len(labels)
                for v in values:
                    vec[_check(v, row_id)] = 1.0
                out.append(vec)
        else:
            out = [float(v) for v in batch["label"]]
        result = dict(enc)
        result.update(labels=out, length=[len(x) for x in enc["input_ids"]], index=indices)
        return result

    fn = token_batch if problem is Problem.TOKEN else sequence_batch
    encoded = ds.map(fn, batched=True, with_indices=True, desc=desc, remove_columns=list(ds.column_names))
    return encoded.remove_columns([c for c in encoded.column_names if c not in keep])


@dataclass
class Collator:
    """Pad a list of encoded rows into a batch (dynamic padding unless ``pad_to`` is given)."""

    tokenizer: Any
    problem: Problem
    pad_to: int | None = None  # fixed padding length (benchmarks); None = longest in batch

    def __call__(self, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
        import torch

        inputs = [{k: r[k] for k in MODEL_INPUTS if k in r} for r in rows]
        if self.pad_to:
            batch = self.tokenizer.pad(inputs, padding="max_length", max_length=self.pad_to, return_tensors="pt")
        else:
            batch = self.tokenizer.pad(inputs, padding="longest", return_tensors="pt")
        width = batch["input_ids"].shape[1]
        if self.problem is Problem.TOKEN:
            side = getattr(self.tokenizer, "padding_side", "right")
            padded = []
            for r in rows:
                fill = [-100] * (width - len(r["labels"]))
                padded.append(fill + list(r["labels"]) if side == "left" else list(r["labels"]) + fill)
            batch["labels"] = torch.tensor(padded, dtype=torch.long)
        elif self.problem is Problem.CLASSIFY:
            batch["labels"] = torch.tensor([r["labels"] for r in rows], dtype=torch.long)
        else:
            batch["labels"] = torch.tensor([r["labels"] for r in rows], dtype=torch.float)
        batch["index"] = torch.tensor([r["index"] for r in rows], dtype=torch.long)
        return dict(batch)


class LengthBucketSampler:
    """Batches of similar length, in a random order that is the same on every process.

    Shuffle all indices (seeded by seed + epoch), cut them into pools of ``batch_size * pool_batches``,
    sort each pool by length, cut into batches and shuffle the batches. Every process computes the same
    sequence; accelerate then hands each process its share of the batches.
    """

    def __init__(self, lengths: Sequence[int], batch_size: int, seed: int, shuffle: bool = True,
                 pool_batches: int = 50, bucketing: bool = True) -> None:
        self.lengths = list(lengths)
        self.size = batch_size
        # What accelerate reads when it shards the batches over processes. An evaluation sampler reports none:
        # with a batch size, accelerate fills the last batch of each process up to it with repeated examples
        # (a 4-example dev set at eval batch 128 became 128 forward passes per process, 60x the work), which
        # gather_for_metrics then drops again. Without one it hands out whole batches, repeating at most one.
        self.batch_size: int | None = batch_size if shuffle else None
        self.seed = seed
        self.shuffle = shuffle
        self.pool_batches = pool_batches
        self.bucketing = bucketing
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return (len(self.lengths) + self.size - 1) // self.size

    def batches(self) -> list[list[int]]:
        order = list(range(len(self.lengths)))
        rng = random.Random(self.seed * 100_003 + self.epoch)
        if not self.shuffle:  # evaluation: longest first, so memory problems show up at once
            if self.bucketing:
                order.sort(key=lambda i: -self.lengths[i])
            return [order[i:i + self.size] for i in range(0, len(order), self.size)]
        rng.shuffle(order)
        if not self.bucketing:
            return [order[i:i + self.size] for i in range(0, len(order), self.size)]
        pool = self.size * self.pool_batches
        out: list[list[int]] = []
        for start in range(0, len(order), pool):
            chunk = sorted(order[start:start + pool], key=lambda i: self.lengths[i])
            out.extend(chunk[i:i + self.size] for i in range(0, len(chunk), self.size))
        rng.shuffle(out)
        return out

    def __iter__(self) -> Iterator[list[int]]:
        return iter(self.batches())


def decode_token_predictions(pred_ids: Sequence[int], word_ids: Sequence[int], n_words: int,
                             labels: Sequence[str], default: str) -> tuple[list[str], int]:
    """Per-word tags from per-position predicted ids; returns (tags, number of words never seen)."""
    tags = [None] * n_words
    for label_id, word in zip(pred_ids, word_ids, strict=False):
        if word >= 0 and tags[word] is None:
            tags[word] = labels[int(label_id)]
    missing = sum(1 for t in tags if t is None)
    return [t if t is not None else default for t in tags], missing


# Decision thresholds (sigmoid probabilities) tried on dev for multi-label tasks; 0.5 is the default.
MULTILABEL_THRESHOLDS = (0.5, 0.4, 0.3, 0.25, 0.2, 0.15, 0.1, 0.05)


def decode_sequence_prediction(output: Sequence[float] | float, problem: Problem, labels: Sequence[str],
                               threshold: float = 0.5) -> Any:
    """One prediction in the ``medibio blurb score`` format from the model's raw output for one example.

    Multi-label outputs are logits; a label is predicted when sigmoid(logit) > ``threshold``.
    """
    if problem is Problem.REGRESSION:
        value = output[0] if isinstance(output, (list, tuple)) else output
        return float(value)
    if problem is Problem.MULTILABEL:
        cut = math.log(threshold / (1.0 - threshold))
        return [labels[i] for i, logit in enumerate(output) if logit > cut]
    best = max(range(len(output)), key=lambda i: output[i])
    return labels[best]


def class_weights(label_ids: Sequence[int], n_labels: int, mode: str) -> list[float] | None:
    """Cross-entropy weights per class from the training labels, or ``None`` for ``mode="none"``.

    Why: on the capped CPU budget the RE and QA heads otherwise settle on the majority class (DDI-false,
    "yes"), which scores 0 micro-F1 on DDI and the bare majority rate on PubMedQA/BioASQ. ``balanced``
    weighs each class by 1/count, ``sqrt`` by 1/sqrt(count) (milder); weights have mean 1 over the classes
    seen in training, and classes absent from it get weight 0 (they cannot be learnt from this subset).
    """
    if mode not in CLASS_WEIGHTINGS:
        raise ValueError(f"class_weighting must be one of {', '.join(CLASS_WEIGHTINGS)}, not {mode!r}")
    if mode == "none":
        return None
    counts = [0] * n_labels
    for i in label_ids:
        counts[int(i)] += 1
    power = 1.0 if mode == "balanced" else 0.5
    raw = [c ** -power if c else 0.0 for c in counts]
    present = [w for w in raw if w]
    if not present:
        raise ValueError("class_weights: no training labels")
    mean = sum(present) / len(present)
    return [w / mean for w in raw]


def references(ds: Any, problem: Problem) -> list[Any]:
    """Gold answers of a split in the prediction format (tags per word, label, label list, float)."""
    if problem is Problem.TOKEN:
        return [list(t) for t in ds["tags"]]
    if problem is Problem.REGRESSION:
        return [float(v) for v in ds["label"]]
    if problem is Problem.MULTILABEL:
        return [list(v) for v in ds["label"]]
    return [str(v) for v in ds["label"]]
