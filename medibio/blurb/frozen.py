"""No-training baselines: what the encoder scores *without* fine-tuning, beside every fine-tuned score.

Why: a fine-tuned score is only worth its training if it beats what the same encoder does frozen. A score
below that baseline is a defect of the fine-tuning protocol (issue 11, section 3), not a property of the
model. Three baselines, all on the encoder's last hidden layer, no gradient step on the encoder:

* ``cosine`` (BIOSSES, and the IFT similarity sets STS-B and SICK-R): the cosine similarity of the two
  sentences' mean-pooled embeddings (mean over all positions the attention mask keeps, special tokens
  included, as sentence-transformers pools), no training at all. The metric is Pearson's r, which does not
  change under an increasing affine map, so the cosine is *not* mapped to the label scale (0-4, 0-5, 1-5):
  the score is the same either way.
* ``probe`` (RE, HoC, QA): a scikit-learn ``LogisticRegression`` on standardised mean-pooled embeddings of
  exactly the input the fine-tuned model sees (the same tokenisation, entity-marker text, text pair and
  truncation, :func:`medibio.finetune.features.encode`), trained on the *same capped training subset* as
  the profile's fine-tuning run (:func:`medibio.finetune.features.subsample` with the runner's
  ``SUBSET_SEED`` and the preset's caps). The regularisation strength is picked on the same capped dev
  subset; single-label sets use the preset's class weighting, HoC is one-vs-rest with the decision
  threshold picked on dev from the fine-tuning trainer's candidates.
* ``token-probe`` (NER): the same probe on the embedding of each word's *first* sub-token (the position the
  fine-tuned token classifier is trained on), one tag per word.

Scores use :mod:`medibio.blurb.metrics` on the test set the fine-tuned run of the profile is scored on (the
full official test set except on ``smoke``), with a percentile-bootstrap 95 % interval over the dataset's
test units (:mod:`medibio.blurb.units`). Each result is a run record of kind ``frozen``
(:mod:`medibio.runs.records`) whose digest covers the model's fingerprint, the dataset and its files'
checksums, the caps and the probe settings; a request with the same digest reuses it, any change runs into
a record of its own. :func:`baselines` is what the book calls.
"""

from __future__ import annotations

import contextlib
import functools
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from medibio import profiles
from medibio.blurb.registry import Problem
from medibio.profiles import Profile
from medibio.runs import identity

KIND = "frozen"
SEED = 0  # the baselines are deterministic: one record per configuration, named seed 0
# Part of every digest: bump it when a code change alters what a given configuration computes.
PROTOCOL = 1
SIMILARITY_TASKS = ("STS-B", "SICK-R")  # IFT similarity sets that get the cosine baseline too
METHODS = {Problem.REGRESSION: "cosine", Problem.TOKEN: "token-probe", Problem.CLASSIFY: "probe",
           Problem.MULTILABEL: "probe"}


@dataclass(frozen=True)
class ProbeSettings:
    """How the frozen features are read and the probe is fitted (all of it is part of the digest)."""

    pooling: str = "mean"  # sequence features: masked mean of the last hidden layer
    token_position: str = "first-subword"  # token features: each word's first sub-token
    c_grid: tuple[float, ...] = (0.01, 0.1, 1.0, 10.0)  # LogisticRegression C, picked on capped dev
    max_iter: int = 2000
    standardise: bool = True  # zero mean, unit variance per feature (fitted on train)
    batch_size: int = 64  # encoding batch (does not change results beyond float noise)
    resamples: int = 1000  # bootstrap resamples for the 95 % interval
    # Encoding precision asked for: bf16 autocast where the device computes it natively (as the fine-tuned
    # runs evaluate), which roughly halves the cost of encoding the full test sets on such CPUs; the digest
    # holds the precision actually used, so a machine that encodes in fp32 makes records of its own.
    precision: str = "bf16"

    @property
    def effective_precision(self) -> str:
        """``"bf16"`` or ``"fp32"``: what this machine's CPU (the frozen encoder runs there) encodes with
        (:func:`medibio.accel.precision_for`)."""
        from medibio import accel

        cpu = accel.Device("cpu", accel.cpu_has_bf16())
        return "bf16" if accel.precision_for(cpu, requested=self.precision) == "bf16" else "fp32"

    def to_dict(self) -> dict[str, Any]:
        return {"pooling": self.pooling, "token_position": self.token_position, "c_grid": list(self.c_grid),
                "max_iter": self.max_iter, "standardise": self.standardise, "resamples": self.resamples,
                "precision": self.effective_precision, "solver": "lbfgs"}


@dataclass(frozen=True)
class FrozenPlan:
    """One baseline, fully resolved: what is computed and the key its record has."""

    spec: Any  # a BLURB DatasetSpec or an IFT task spec
    model: str
    profile: Profile
    method: str
    caps: dict[str, Any]
    probe: ProbeSettings
    payload: dict[str, Any]  # the effective configuration; its digest is the baseline's identity
    request: dict[str, Any]
    key: identity.RunKey


def _spec(dataset: str) -> Any:
    """A BLURB dataset, else an intermediate similarity task (STS-B, SICK-R)."""
    from medibio.blurb import registry
    from medibio.ift import tasks as ift_tasks

    try:
        return registry.get(dataset)
    except KeyError:
        spec = ift_tasks.get_ift(dataset)
        if Problem(spec.problem) is not Problem.REGRESSION:
            raise ValueError(f"{spec.name}: frozen baselines cover BLURB datasets and the IFT similarity sets "
                             f"{', '.join(SIMILARITY_TASKS)}, not {spec.name} ({spec.problem.value})") from None
        return spec


def _is_blurb(spec: Any) -> bool:
    from medibio.blurb import registry

    return spec.name in registry.names()


def _caps(spec: Any, prof: Profile, overrides: Mapping[str, Any] | None) -> dict[str, Any]:
    """The parts of the fine-tuning preset that decide what the baseline sees: caps, length, weighting."""
    from medibio.finetune import presets, runner

    if _is_blurb(spec):
        cfg = presets.apply_overrides(presets.preset(spec.name, prof), spec.name, overrides)
    else:  # an IFT similarity set: its intermediate-stage length and the profile's caps (no training)
        cfg = presets.apply_overrides(presets.intermediate_preset(spec.name, prof, spec.max_length), spec.name,
                                      overrides)
    return {"max_train_examples": cfg.max_train_examples, "max_dev_examples": cfg.max_dev_examples,
            "max_test_examples": cfg.max_test_examples, "max_length": cfg.max_length,
            "class_weighting": cfg.class_weighting, "subset_seed": runner.SUBSET_SEED}


def _data_files(spec: Any, data_root: str | Path | None) -> list[Path]:
    from medibio.blurb import loaders
    from medibio.ift import tasks as ift_tasks

    if _is_blurb(spec):
        return [p for split in loaders.SPLITS for p in loaders.split_files(spec.name, split, data_root)]
    return ift_tasks.data_files(spec.name, data_root)


def plan_frozen(dataset: str, model: str | None = None, profile: str | Profile = profiles.DEFAULT_PROFILE,
                overrides: Mapping[str, Any] | None = None, probe: ProbeSettings | None = None,
                data_root: str | Path | None = None) -> FrozenPlan:
    """Resolve one baseline into its configuration and key (nothing is computed)."""
    from medibio.paths import data_root as resolve_data_root
    from medibio.runs import records as rec

    prof = profiles.get(profile)
    spec = _spec(dataset)
    model = str(model or prof.model)
    probe = probe or ProbeSettings()
    method = METHODS[Problem(spec.problem)]
    caps = _caps(spec, prof, overrides)
    root = resolve_data_root(data_root, must_exist=False)
    payload = {"protocol": PROTOCOL, "kind": KIND, "method": method, "dataset": spec.name,
               "model": rec.model_fingerprint(model), "caps": caps,
               "probe": probe.to_dict() if method != "cosine" else
               {"pooling": probe.pooling, "precision": probe.effective_precision, "resamples": probe.resamples},
               "data": identity.files_fingerprint(_data_files(spec, data_root), root=root)}
    request = {"dataset": spec.name, "model": model, "profile": prof.name,
               "overrides": {k: v for k, v in (overrides or {}).items() if v is not None},
               "probe": probe.to_dict() | {"batch_size": probe.batch_size}}
    key = identity.RunKey(KIND, prof.name, rec.model_tag(model), method, spec.name, SEED, identity.digest(payload))
    return FrozenPlan(spec, model, prof, method, caps, probe, payload, request, key)


def replan(record: Any, data_root: str | Path | None = None) -> FrozenPlan:
    """The plan the request behind a frozen record gets today (``medibio results list --stale``)."""
    req = record.request
    saved = dict(req.get("probe") or {})
    probe = ProbeSettings(pooling=saved.get("pooling", "mean"),
                          token_position=saved.get("token_position", "first-subword"),
                          c_grid=tuple(saved.get("c_grid", ProbeSettings.c_grid)),
                          max_iter=int(saved.get("max_iter", ProbeSettings.max_iter)),
                          standardise=bool(saved.get("standardise", True)),
                          batch_size=int(saved.get("batch_size", ProbeSettings.batch_size)),
                          resamples=int(saved.get("resamples", ProbeSettings.resamples)))
    return plan_frozen(req["dataset"], req["model"], req["profile"], req.get("overrides") or None, probe,
                       data_root)


# --------------------------------------------------------------------------- frozen features


class Encoder:
    """The bare pretrained encoder (no task head) in eval mode, with its tokenizer per problem; ``precision``
    ``"bf16"`` runs it under bf16 autocast (features are returned in fp32 either way)."""

    def __init__(self, model: str, precision: str = "fp32") -> None:
        from transformers import AutoModel
        from transformers.utils import logging as hf_logging

        from medibio import modelzoo

        self.model_name = model
        self.precision = precision
        level = hf_logging.get_verbosity()
        hf_logging.set_verbosity_error()
        try:
            self.net = AutoModel.from_pretrained(modelzoo.resolve(model)).eval()
        finally:
            hf_logging.set_verbosity(level)
        self._tokenizers: dict[Problem, Any] = {}

    def tokenizer(self, problem: Problem) -> Any:
        from medibio.finetune import modeling

        if problem not in self._tokenizers:
            self._tokenizers[problem] = modeling.load_tokenizer(self.model_name, problem)
        return self._tokenizers[problem]

    def hidden_states(self, encoded: Any, problem: Problem, batch_size: int, desc: str = "frozen encoding"):
        """Yield (row indices, last hidden states, attention mask) per batch, longest batches first, with a
        progress bar (:mod:`medibio.progress`): encoding a full test set takes minutes on a CPU."""
        import torch
        from torch.utils.data import DataLoader

        from medibio import progress
        from medibio.finetune import features

        tokenizer = self.tokenizer(problem)
        sampler = features.LengthBucketSampler(encoded["length"], batch_size, seed=0, shuffle=False)
        loader = DataLoader(encoded, batch_sampler=sampler, collate_fn=features.Collator(tokenizer, problem))
        with torch.no_grad(), progress.bar(desc, len(loader), unit="batch") as bar:
            for batch in loader:
                inputs = {k: batch[k] for k in features.MODEL_INPUTS if k in batch}
                with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.precision == "bf16"):
                    hidden = self.net(**inputs).last_hidden_state.float()
                bar.update(1)
                yield batch["index"].tolist(), hidden, batch["attention_mask"]

    def sentence_embeddings(self, raw: Any, spec: Any, max_length: int, batch_size: int,
                            part: str = "") -> np.ndarray:
        """Masked mean of the last layer per example, on the fine-tuning input (text [+ text_pair])."""
        from medibio.finetune import features

        problem = Problem(spec.problem)
        encoded = features.encode(raw, spec, self.tokenizer(problem), max_length, desc="tokenise (frozen)")
        out = np.zeros((len(raw), self.net.config.hidden_size), dtype=np.float32)
        for index, hidden, mask in self.hidden_states(encoded, problem, batch_size, _desc(spec, part)):
            m = mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * m).sum(1) / m.sum(1).clamp(min=1.0)
            out[index] = pooled.numpy()
        return out

    def word_embeddings(self, raw: Any, spec: Any, max_length: int, batch_size: int,
                        part: str = "") -> tuple[list[np.ndarray], list[list[int]], list[int]]:
        """Per sentence, the first-sub-token vectors of the words the model sees, their word numbers, and
        the sentence's word count (words cut off by ``max_length`` get no vector)."""
        from medibio.finetune import features

        problem = Problem.TOKEN
        encoded = features.encode(raw, spec, self.tokenizer(problem), max_length, desc="tokenise (frozen)")
        word_ids = list(encoded["word_ids"])  # a datasets column read row by row is slow: read it once
        vectors: list[np.ndarray] = [np.zeros((0, 0), dtype=np.float32)] * len(raw)
        words: list[list[int]] = [[] for _ in range(len(raw))]
        for index, hidden, _ in self.hidden_states(encoded, problem, batch_size, _desc(spec, part)):
            for row, i in enumerate(index):
                positions = [p for p, w in enumerate(word_ids[i]) if w >= 0]
                vectors[i] = hidden[row, positions].numpy()
                words[i] = [word_ids[i][p] for p in positions]
        return vectors, words, list(encoded["n_words"])


def _desc(spec: Any, part: str) -> str:
    """The label of an encoding pass's progress bar: ``frozen BIOSSES test (left)``."""
    return " ".join(filter(None, ["frozen", spec.name, part]))


def load_encoder(model: str, precision: str = "fp32") -> Encoder:
    """The encoder of the last model asked for, kept so that a table of 15 baselines loads it once
    (keyed by the weights' fingerprint too, so a rebuilt model folder is loaded afresh)."""
    from medibio.runs.records import model_fingerprint

    return _load_encoder(model, model_fingerprint(model), precision)


@functools.lru_cache(maxsize=1)
def _load_encoder(model: str, fingerprint: str, precision: str) -> Encoder:
    return Encoder(model, precision)


# --------------------------------------------------------------------------- probes


def _single_label_probe(x_train: np.ndarray, y_train: np.ndarray, n_classes: int, weighting: str,
                        c: float, settings: ProbeSettings) -> Any:
    """A fitted standardise + LogisticRegression pipeline; a training set with one class gets a constant."""
    from sklearn.dummy import DummyClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from medibio.finetune import features

    if len(np.unique(y_train)) < 2:
        return DummyClassifier(strategy="most_frequent").fit(x_train, y_train)
    weights = features.class_weights(y_train.tolist(), n_classes, weighting)
    class_weight = None if weights is None else {i: w for i, w in enumerate(weights) if w}
    steps = [StandardScaler()] if settings.standardise else []
    clf = LogisticRegression(C=c, max_iter=settings.max_iter, class_weight=class_weight)
    with _quiet_convergence():
        return make_pipeline(*steps, clf).fit(x_train, y_train)


def _multilabel_probe(x_train: np.ndarray, y_train: np.ndarray, c: float, settings: ProbeSettings) -> Any:
    """One-vs-rest LogisticRegression (HoC); a hallmark absent from training stays always-off."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.multiclass import OneVsRestClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    steps = [StandardScaler()] if settings.standardise else []
    clf = OneVsRestClassifier(LogisticRegression(C=c, max_iter=settings.max_iter))
    with _quiet_convergence():
        return make_pipeline(*steps, clf).fit(x_train, y_train)


@contextlib.contextmanager
def _quiet_convergence():
    """sklearn warns per fit when lbfgs stops at ``max_iter`` or a one-vs-rest label is constant; the
    probe's dev selection already judges the fit, so the warnings would only clutter the book's logs."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.filterwarnings("ignore", message="Label not .* is present in all training examples")
        yield


def _scores(pipeline: Any, x: np.ndarray) -> np.ndarray:
    """Per-class decision values, columns in class-id order (classes absent from training at -inf)."""
    classes = np.asarray(pipeline.classes_)
    if hasattr(pipeline, "decision_function"):
        values = np.asarray(pipeline.decision_function(x), dtype=np.float64)
        if values.ndim == 1:  # binary: the decision value is that of classes_[1]
            values = np.stack([-values, values], axis=1)
    else:  # DummyClassifier (a single training class): its constant probabilities
        values = np.asarray(pipeline.predict_proba(x), dtype=np.float64)
    return _columns(values, classes)


def _columns(values: np.ndarray, classes: np.ndarray) -> np.ndarray:
    width = int(max(classes)) + 1
    out = np.full((values.shape[0], width), -np.inf)
    out[:, [int(c) for c in classes]] = values
    return out


def _metric(spec: Any, references: Sequence[Any], predictions: Sequence[Any], ids: Sequence[str]) -> dict[str, float]:
    from medibio.finetune.trainer import score

    return score(spec, list(references), list(predictions), list(ids))


@dataclass
class _Outcome:
    dev: dict[str, float]
    test: dict[str, float]
    predictions: list[Any]
    notes: list[str]
    settings: dict[str, Any]


def _decode_single(scores: np.ndarray, labels: Sequence[str]) -> list[str]:
    return [labels[int(i)] for i in np.argmax(scores, axis=1)]


def _cosine(encoder: Encoder, spec: Any, splits: Mapping[str, Any], caps: Mapping[str, Any],
            settings: ProbeSettings) -> _Outcome:
    """Cosine of the two sentences' mean-pooled embeddings; each sentence is encoded alone."""
    out: dict[str, tuple[dict[str, float], list[float]]] = {}
    for split in ("dev", "test"):
        raw = splits[split]
        left = raw.remove_columns("text_pair")
        right = raw.remove_columns("text").rename_column("text_pair", "text")
        size, length = settings.batch_size, caps["max_length"]
        a = encoder.sentence_embeddings(left, spec, length, size, f"{split} (sentence 1)")
        b = encoder.sentence_embeddings(right, spec, length, size, f"{split} (sentence 2)")
        cos = cosine_similarity(a, b).tolist()
        out[split] = (_metric(spec, raw["label"], cos, raw["id"]), cos)
    notes = ["no training: Pearson's r of the cosine, which no affine map to the label scale would change"]
    return _Outcome(out["dev"][0], out["test"][0], out["test"][1], notes, {})


def cosine_similarity(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine of two matrices (a zero vector has cosine 0 with anything)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    dots = np.einsum("ij,ij->i", a, b)
    return np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)


def _sequence_probe(encoder: Encoder, spec: Any, splits: Mapping[str, Any], caps: Mapping[str, Any],
                    settings: ProbeSettings) -> _Outcome:
    """LogisticRegression (one-vs-rest for HoC) on mean-pooled embeddings; C and threshold picked on dev."""
    from medibio.finetune import features

    problem = Problem(spec.problem)
    labels = features.label_list(spec)
    index = {name: i for i, name in enumerate(labels)}
    x = {s: encoder.sentence_embeddings(splits[s], spec, caps["max_length"], settings.batch_size, s)
         for s in ("train", "dev", "test")}
    refs = {s: features.references(splits[s], problem) for s in ("dev", "test")}
    if problem is Problem.MULTILABEL:
        y = np.zeros((len(splits["train"]), len(labels)), dtype=int)
        for row, values in enumerate(splits["train"]["label"]):
            y[row, [index[v] for v in values]] = 1
    else:
        y = np.array([index[str(v)] for v in splits["train"]["label"]])

    def decode(pipeline: Any, split: str, threshold: float) -> list[Any]:
        if problem is Problem.MULTILABEL:
            logits = np.asarray(pipeline.decision_function(x[split]), dtype=np.float64)
            return [features.decode_sequence_prediction(row.tolist(), problem, labels, threshold) for row in logits]
        return _decode_single(_scores(pipeline, x[split]), labels)

    thresholds = features.MULTILABEL_THRESHOLDS if problem is Problem.MULTILABEL else (0.5,)
    best: tuple[float, float, float, Any, dict[str, float]] | None = None
    for c in settings.c_grid:
        if problem is Problem.MULTILABEL:
            pipeline = _multilabel_probe(x["train"], y, c, settings)
        else:
            pipeline = _single_label_probe(x["train"], y, len(labels), caps["class_weighting"], c, settings)
        for t in thresholds:
            dev = _metric(spec, refs["dev"], decode(pipeline, "dev", t), splits["dev"]["id"])
            if best is None or dev["score"] > best[4]["score"]:  # strict: ties keep the smaller C
                best = (c, t, 0.0, pipeline, dev)
    assert best is not None
    c, t, _, pipeline, dev = best
    preds = decode(pipeline, "test", t)
    test = _metric(spec, refs["test"], preds, splits["test"]["id"])
    notes = [f"LogisticRegression C={c:g} chosen on dev from {list(settings.c_grid)}"]
    if problem is Problem.MULTILABEL:
        notes.append(f"one-vs-rest; decision threshold {t} chosen on dev")
    elif caps["class_weighting"] != "none":
        notes.append(f"class weighting {caps['class_weighting']!r}, as in the fine-tuning preset")
    if problem is not Problem.MULTILABEL and len(np.unique(y)) < 2:
        notes.append("the training subset holds a single class: the probe predicts it everywhere")
    return _Outcome(dev, test, preds, notes, {"C": c, "threshold": t})


def _token_probe(encoder: Encoder, spec: Any, splits: Mapping[str, Any], caps: Mapping[str, Any],
                 settings: ProbeSettings) -> _Outcome:
    """LogisticRegression on each word's first-sub-token vector; one tag per word, C picked on dev."""
    from medibio.finetune import features

    labels = features.label_list(spec)
    index = {name: i for i, name in enumerate(labels)}
    default = features.outside_label(spec)
    emb = {s: encoder.word_embeddings(splits[s], spec, caps["max_length"], settings.batch_size, s)
           for s in ("train", "dev", "test")}
    vectors, words, _ = emb["train"]
    tags = splits["train"]["tags"]
    x_train = np.concatenate([v for v in vectors if len(v)], axis=0)
    y_train = np.array([index[tags[i][w]] for i in range(len(vectors)) for w in words[i]])

    def decode(pipeline: Any, split: str) -> tuple[list[list[str]], int]:
        vecs, wids, n_words = emb[split]
        flat = np.concatenate([v for v in vecs if len(v)], axis=0)
        ids = np.argmax(_scores(pipeline, flat), axis=1)
        out, unseen, start = [], 0, 0
        for i in range(len(vecs)):
            row = [default] * n_words[i]
            for w, k in zip(wids[i], ids[start:start + len(wids[i])], strict=True):
                row[w] = labels[int(k)]
            start += len(wids[i])
            unseen += n_words[i] - len(wids[i])
            out.append(row)
        return out, unseen

    gold = {s: features.references(splits[s], Problem.TOKEN) for s in ("dev", "test")}
    best: tuple[float, Any, dict[str, float]] | None = None
    for c in settings.c_grid:
        pipeline = _single_label_probe(x_train, y_train, len(labels), caps["class_weighting"], c, settings)
        dev = _metric(spec, gold["dev"], decode(pipeline, "dev")[0], splits["dev"]["id"])
        if best is None or dev["score"] > best[2]["score"]:
            best = (c, pipeline, dev)
    assert best is not None
    c, pipeline, dev = best
    preds, unseen = decode(pipeline, "test")
    test = _metric(spec, gold["test"], preds, splits["test"]["id"])
    notes = [f"LogisticRegression on {len(y_train)} training words, C={c:g} chosen on dev from "
             f"{list(settings.c_grid)}"]
    if unseen:
        notes.append(f"{unseen} test words beyond max_length={caps['max_length']} predicted as {default!r}")
    return _Outcome(dev, test, preds, notes, {"C": c, "training_words": int(len(y_train))})


# --------------------------------------------------------------------------- records


def _splits(plan: FrozenPlan, data_root: str | Path | None) -> dict[str, Any]:
    """The capped splits the profile's fine-tuning run uses (the runner's subsample, seed and caps)."""
    from medibio.blurb.loaders import load_blurb
    from medibio.finetune import features, runner
    from medibio.ift import tasks as ift_tasks

    caps = plan.caps
    if _is_blurb(plan.spec):
        data = load_blurb(plan.spec.name, data_root)
    else:
        data = ift_tasks.load_task(plan.spec.name, data_root)
    out = {"test": features.subsample(data["test"], caps["max_test_examples"], runner.SUBSET_SEED),
           "dev": features.subsample(data["dev"], caps["max_dev_examples"], runner.SUBSET_SEED)}
    if "train" in data:
        out["train"] = features.subsample(data["train"], caps["max_train_examples"], runner.SUBSET_SEED)
    return out


def score_interval(spec: Any, references: Sequence[Any], predictions: Sequence[Any], ids: Sequence[str],
                  resamples: int) -> tuple[float, float, int]:
    """Percentile-bootstrap 95 % interval of the test score over the dataset's resampling units (pairs for
    the IFT similarity sets)."""
    from medibio.blurb import units
    from medibio.runs.significance import bootstrap_interval

    if _is_blurb(spec):
        stats = units.unit_stats(spec.name, references, predictions, ids)
    else:
        stat = units.STATISTICS[spec.metric]
        rows = stat.rows(list(references), list(predictions), list(ids), None)
        stats = units.UnitStats(spec.name, spec.metric, "pair", tuple(ids), stat.columns, rows)
    interval = bootstrap_interval(stats, resamples=resamples)
    return interval.low, interval.high, interval.n_units


def compute(plan: FrozenPlan, data_root: str | Path | None = None,
            encoder: Encoder | None = None) -> tuple[Any, list[dict[str, Any]] | None]:
    """Compute one baseline; return its record and test predictions (None when skipped)."""
    from medibio.blurb.loaders import OPTIONAL_SPLITS, required_splits
    from medibio.runs import records as rec

    spec = plan.spec
    ident = {"config_digest": plan.key.config_digest, "config": plan.payload, "request": plan.request,
             "variant": plan.method, "kind": KIND}
    started = time.perf_counter()
    if plan.method != "cosine" and _is_blurb(spec):
        here = required_splits(spec.name, data_root)  # only a documented absence may be missing
        if "train" not in here:
            return rec.skipped_record(spec.name, rec.model_info(plan.model), plan.profile.name, SEED,
                                      reason=f"train split absent in the data root (has {', '.join(here)}): "
                                             f"no probe can be trained. {OPTIONAL_SPLITS[(spec.name, 'train')]}",
                                      hyperparameters=dict(plan.caps), **ident), None
    splits = _splits(plan, data_root)
    encoder = encoder or load_encoder(plan.model, plan.probe.effective_precision)
    run = {"cosine": _cosine, "probe": _sequence_probe, "token-probe": _token_probe}[plan.method]
    outcome = run(encoder, spec, splits, plan.caps, plan.probe)
    test = splits["test"]
    refs = _references(spec, test)
    low, high, n_units = score_interval(spec, refs, outcome.predictions, test["id"], plan.probe.resamples)
    wall = time.perf_counter() - started
    test_metrics = {**outcome.test, "ci95_low": low, "ci95_high": high, "units": n_units}
    env = rec.environment_info()
    record = rec.RunRecord(
        dataset=spec.name, model=rec.model_info(plan.model, encoder.net), profile=plan.profile.name, seed=SEED,
        group=spec.group.value if _is_blurb(spec) else "IFT", problem=Problem(spec.problem).value,
        hyperparameters={**plan.caps, **plan.payload["probe"], **outcome.settings}, dev=outcome.dev,
        test=test_metrics, score_dev=outcome.dev.get("score"), score_test=outcome.test.get("score"),
        predictions=plan.key.predictions_path(Path(".")).name,
        train_examples=len(splits["train"]) if "train" in splits and plan.method != "cosine" else 0,
        eval_examples=len(test), wall_time_s=round(wall, 2), device="cpu", versions=env["versions"],
        git_commit=env["git_commit"], notes=outcome.notes, **ident)
    preds = [{"id": i, "prediction": p} for i, p in zip(test["id"], outcome.predictions, strict=True)]
    return record, preds


def _references(spec: Any, split: Any) -> list[Any]:
    from medibio.finetune import features

    return features.references(split, Problem(spec.problem))


def run_baseline(plan: FrozenPlan, results_root: str | Path, data_root: str | Path | None = None,
                 force: bool = False, encoder: Encoder | None = None) -> tuple[Any, bool]:
    """The baseline's record: reused when one with the same digest exists (unless ``force``), else computed
    and written (predictions first, record last, both atomic). Returns (record, reused)."""
    from medibio import cores, progress
    from medibio.atomic import write_jsonl
    from medibio.runs import records as rec

    root = Path(results_root)
    with rec.run_lock(plan.key, root):
        existing = None if force else rec.find_record(root, plan.key)
        label = f"frozen {plan.method} {plan.spec.name} [{plan.key.model_tag}]"
        if existing is not None:
            progress.say(f"= {label}: reused its record ({_score_text(existing)})", kind="run",
                         reused=True)
            return existing, True
        progress.say(f"▶ {label} (config {plan.key.config_digest})")
        threads = cores.follow()  # fixed for the whole computation, and recorded (medibio.cores)
        record, preds = compute(plan, data_root, encoder)
        record.cpu_threads = threads
        if preds is not None:
            write_jsonl(plan.key.predictions_path(root), preds)
        rec.write_record(record, root)
        mark = "✓" if record.ok else "–"  # a skipped baseline (no training split) is no finished run
        progress.say(f"{mark} {label}: {_score_text(record)} ({record.wall_time_s or 0:.0f} s)", kind="run",
                     reused=False, seconds=record.wall_time_s)
        return record, False


def _score_text(record: Any) -> str:
    """``test 71.20 [69.80, 72.60]``, or why the baseline was skipped."""
    if not record.ok or record.score_test is None:
        return f"skipped: {record.reason}"
    low, high = record.test.get("ci95_low"), record.test.get("ci95_high")
    interval = f" [{low:.2f}, {high:.2f}]" if low is not None and high is not None else ""
    return f"test {record.score_test:.2f}{interval}"


def default_tasks() -> list[str]:
    """Every BLURB dataset, then the IFT similarity sets."""
    from medibio.blurb import registry

    return [*registry.names(), *SIMILARITY_TASKS]


def task_names(tasks: str | Sequence[str] | None) -> list[str]:
    """``None``/``"all"``: :func:`default_tasks`; otherwise BLURB selections (groups, comma lists) and IFT
    similarity set names."""
    from medibio.blurb import registry

    if tasks is None or tasks == "all" or list(tasks) == ["all"]:
        return default_tasks()
    items = tasks.split(",") if isinstance(tasks, str) else list(tasks)
    out: list[str] = []
    for item in (i.strip() for i in items if i.strip()):
        try:
            out.extend(s.name for s in registry.resolve(item))
        except KeyError:
            out.append(_spec(item).name)
    return list(dict.fromkeys(out))


COLUMNS = ("dataset", "group", "metric", "method", "frozen", "ci95_low", "ci95_high", "train_examples",
           "test_examples", "seconds", "reused", "digest", "status")


def baselines(profile: str | Profile = profiles.DEFAULT_PROFILE, tasks: str | Sequence[str] | None = None,
              data_root: str | Path | None = None, results_root: str | Path | None = None,
              model: str | None = None, overrides: Mapping[str, Any] | None = None,
              probe: ProbeSettings | None = None, force: bool = False) -> pd.DataFrame:
    """One row per dataset: the frozen encoder's test score and its 95 % interval (records reused when
    they exist). ``tasks``: BLURB selection and/or STS-B, SICK-R (default: all of them). ``seconds`` is the
    time the record took to compute (also for reused ones)."""
    from medibio.paths import results_root as default_results_root

    root = default_results_root(results_root)
    rows = []
    for name in task_names(tasks):
        plan = plan_frozen(name, model, profile, overrides, probe, data_root)
        record, reused = run_baseline(plan, root, data_root, force)
        rows.append({"dataset": record.dataset, "group": record.group, "metric": plan.spec.metric,
                     "method": plan.method, "frozen": record.score_test,
                     "ci95_low": record.test.get("ci95_low"), "ci95_high": record.test.get("ci95_high"),
                     "train_examples": record.train_examples, "test_examples": record.eval_examples,
                     "seconds": record.wall_time_s, "reused": reused, "digest": record.config_digest,
                     "status": record.status if record.ok else f"skipped: {record.reason}"})
    return pd.DataFrame(rows, columns=list(COLUMNS))


def interval_text(row: Mapping[str, Any]) -> str:
    """``71.2 [69.8, 72.6]`` for a table cell (``-`` for a skipped dataset)."""
    score = row.get("frozen")
    if score is None or (isinstance(score, float) and math.isnan(score)):
        return "-"
    return f"{score:.2f} [{row['ci95_low']:.2f}, {row['ci95_high']:.2f}]"


__all__ = ["KIND", "SIMILARITY_TASKS", "Encoder", "FrozenPlan", "ProbeSettings", "baselines", "compute",
           "cosine_similarity", "default_tasks", "interval_text", "plan_frozen", "replan", "run_baseline",
           "task_names", "score_interval"]
