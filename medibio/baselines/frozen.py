"""No-training baselines: what the encoder scores *without* fine-tuning, beside every fine-tuned score.

Why: a fine-tuned score is only worth its training if it beats what the same encoder does frozen. A score
below that baseline is a defect of the fine-tuning protocol, not a property of the model. Three baselines,
all on the encoder's last hidden layer, no gradient step on the encoder:

* ``cosine`` (BIOSSES, and the IFT similarity sets STS-B and SICK-R): the cosine similarity of the two
  sentences' mean-pooled embeddings (mean over all positions the attention mask keeps, special tokens
  included, as sentence-transformers pools), no training at all. The metric is Pearson's r, which does not
  change under an increasing affine map, so the cosine is *not* mapped to the label scale (0-4, 0-5, 1-5):
  the score is the same either way.
* ``probe`` (RE, HoC, QA): a scikit-learn ``LogisticRegression`` on standardised mean-pooled embeddings of
  exactly the input the fine-tuned model sees (the same tokenisation, entity-marker text, text pair and
  truncation, :func:`medibio.training.features.encode`), trained on the *same capped training subset* as
  the profile's fine-tuning run (:func:`medibio.training.features.subsample` with the runner's
  ``SUBSET_SEED`` and the preset's caps). The regularisation strength is picked on the same capped dev
  subset; single-label sets use the preset's class weighting, HoC is one-vs-rest with the decision
  threshold picked on dev from the fine-tuning trainer's candidates.
* ``token-probe`` (NER): the same probe on the embedding of each word's *first* sub-token (the position the
  fine-tuned token classifier is trained on), one tag per word.

Scores use :mod:`medibio.tasks.metrics` on the test set the fine-tuned run of the profile is scored on (the
full official test set except on ``smoke``), with a percentile-bootstrap 95 % interval over the dataset's
test units (:mod:`medibio.tasks.units`). Each result is a run record of kind ``frozen``
(:mod:`medibio.runs.records`) whose digest covers the model's fingerprint, the dataset and its files'
checksums, the caps and the probe settings; a request with the same digest reuses it, any change runs into
a record of its own. :func:`baselines` is what the book calls.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from medibio.core import precision, profiles, progress
from medibio.core.hashing import files_fingerprint
from medibio.core.profiles import Profile
from medibio.core.settings import Settings
from medibio.models import heads, zoo
from medibio.runs import protocol
from medibio.runs import records as rec
from medibio.runs.protocol import SUBSET_SEED, Outcome, Plan, RunContext
from medibio.tasks import loaders, registry, units
from medibio.tasks.bootstrap import bootstrap_interval
from medibio.tasks.metrics import score
from medibio.tasks.spec import Problem, TaskSpec
from medibio.training import config, features

KIND = "frozen"
SEED = 0  # the baselines are deterministic: one record per configuration, named seed 0
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
    # Encoding precision asked for: bf16 autocast where the device computes it natively, which roughly
    # halves the cost of encoding the full test sets on such CPUs; the digest
    # holds the precision actually used, so a machine that encodes in fp32 makes records of its own.
    precision: str = "bf16"

    @property
    def effective_precision(self) -> str:
        """``"bf16"`` or ``"fp32"``: what this machine's CPU (the frozen encoder runs there) encodes with."""
        return precision.cpu_precision(self.precision)

    def to_dict(self) -> dict[str, Any]:
        return {"pooling": self.pooling, "token_position": self.token_position, "c_grid": list(self.c_grid),
                "max_iter": self.max_iter, "standardise": self.standardise, "resamples": self.resamples,
                "precision": self.effective_precision, "solver": "lbfgs"}


@dataclass(frozen=True)
class Job:
    """What computing a planned baseline needs."""

    spec: TaskSpec
    model: str
    profile: Profile
    method: str
    caps: dict[str, Any]
    probe: ProbeSettings


def baseline_task(dataset: str) -> TaskSpec:
    """A BLURB dataset or an intermediate similarity task (a sentence-pair regression: STS-B, SICK-R ...)."""
    spec = registry.get(dataset)
    if spec.is_blurb or (spec.family == "ift" and spec.problem is Problem.REGRESSION):
        return spec
    raise ValueError(f"{spec.name}: frozen baselines cover BLURB datasets and the intermediate similarity tasks "
                     f"({', '.join(similarity_tasks())}), not {spec.name} ({spec.problem.value})")


def similarity_tasks(data_root: str | Path | None = None) -> list[str]:
    """The intermediate sentence-pair regression tasks (whose data is in ``data_root``, when given)."""
    specs = [s for s in registry.TASKS if s.family == "ift" and s.problem is Problem.REGRESSION]
    return [s.name for s in specs if data_root is None or any(loaders.task_files(s.name, data_root))]


def _caps(spec: TaskSpec, prof: Profile, overrides: Mapping[str, Any] | None) -> dict[str, Any]:
    """The parts of the fine-tuning preset that decide what the baseline sees: caps, length, weighting."""
    if spec.is_blurb:
        cfg = config.apply_overrides(config.preset(spec.name, prof), spec.name, overrides)
    else:  # an IFT similarity set: its intermediate-stage length and the profile's caps (no training)
        cfg = config.apply_overrides(config.intermediate_preset(spec.name, prof, spec.max_length), spec.name,
                                     overrides)
    config.check_scorable(spec, cfg)  # a correlation of one example: refused before any feature is computed
    return {"max_train_examples": cfg.max_train_examples, "max_dev_examples": cfg.max_dev_examples,
            "max_test_examples": cfg.max_test_examples, "max_length": cfg.max_length,
            "class_weighting": cfg.class_weighting, "subset_seed": SUBSET_SEED}


def plan_frozen(dataset: str, model: str | None = None, profile: str | Profile = profiles.DEFAULT_PROFILE,
                overrides: Mapping[str, Any] | None = None, probe: ProbeSettings | None = None,
                settings: Settings | None = None) -> Plan:
    """Resolve one baseline into its configuration and key (nothing is computed)."""
    settings = settings or Settings()
    prof = settings.profile(profile)
    spec = baseline_task(dataset)
    model = str(model or prof.model)
    probe = probe or ProbeSettings()
    method = METHODS[Problem(spec.problem)]
    caps = _caps(spec, prof, overrides)
    configuration = {
        "method": method, "dataset": spec.name, "model": zoo.fingerprint(model, settings.cache_root), "caps": caps,
        "probe": probe.to_dict() if method != "cosine" else
        {"pooling": probe.pooling, "precision": probe.effective_precision, "resamples": probe.resamples},
        "data": files_fingerprint(loaders.task_files(spec.name, settings.data_root), root=settings.data_root)}
    request = {"dataset": spec.name, "model": model, "profile": prof.name, "limit": prof.limit,
               "overrides": {k: v for k, v in (overrides or {}).items() if v is not None},
               "probe": probe.to_dict() | {"batch_size": probe.batch_size}}
    tag = zoo.model_tag(model)
    return protocol.plan(KIND, prof.name, tag, method, spec.name, SEED, configuration, request,
                         f"frozen {method} {spec.name} [{tag}]", Job(spec, model, prof, method, caps, probe),
                         machine=("probe.precision",))


# --------------------------------------------------------------------------- frozen features


class Encoder:
    """The bare pretrained encoder (no task head) in eval mode, with its tokenizer per problem; ``precision``
    ``"bf16"`` runs it under bf16 autocast (features are returned in fp32 either way)."""

    def __init__(self, source: str, precision: str = "fp32") -> None:
        from transformers import AutoModel
        from transformers.utils import logging as hf_logging

        self.source = source
        self.precision = precision
        level = hf_logging.get_verbosity()
        hf_logging.set_verbosity_error()
        try:
            self.net = AutoModel.from_pretrained(source).eval()
        finally:
            hf_logging.set_verbosity(level)
        self._tokenizers: dict[Problem, Any] = {}

    def tokenizer(self, problem: Problem) -> Any:
        if problem not in self._tokenizers:
            self._tokenizers[problem] = heads.load_tokenizer(self.source, problem)
        return self._tokenizers[problem]

    def hidden_states(self, encoded: Any, problem: Problem, batch_size: int, desc: str = "frozen encoding"):
        """Yield (row indices, last hidden states, attention mask) per batch, longest batches first, with a
        progress bar (:mod:`medibio.core.progress`): encoding a full test set takes minutes on a CPU."""
        import torch
        from torch.utils.data import DataLoader

        tokenizer = self.tokenizer(problem)
        sampler = features.LengthBucketSampler(encoded["length"], batch_size, seed=0, shuffle=False)
        loader = DataLoader(encoded, batch_sampler=sampler, collate_fn=features.Collator(tokenizer, problem))
        with torch.no_grad(), progress.bar(desc, len(loader), unit="batch") as bar:
            for batch in loader:
                inputs = {k: batch[k] for k in features.MODEL_INPUTS if k in batch}
                # autocast over fp32 weights, not a bf16 copy: bf16 weights lowered two probes significantly
                # (GAD -3.8, BC5-chem -1.9 points, paired bootstrap; docs/benchmarks.md)
                with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.precision == "bf16"):
                    hidden = self.net(**inputs).last_hidden_state.float()
                bar.update(1)
                yield batch["index"].tolist(), hidden, batch["attention_mask"]

    def sentence_embeddings(self, raw: Any, spec: TaskSpec, max_length: int, batch_size: int,
                            part: str = "") -> np.ndarray:
        """Masked mean of the last layer per example, on the fine-tuning input (text [+ text_pair])."""
        problem = Problem(spec.problem)
        encoded = features.encode(raw, spec, self.tokenizer(problem), max_length, desc="tokenise (frozen)")
        out = np.zeros((len(raw), self.net.config.hidden_size), dtype=np.float32)
        for index, hidden, mask in self.hidden_states(encoded, problem, batch_size, _desc(spec, part)):
            m = mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * m).sum(1) / m.sum(1).clamp(min=1.0)
            out[index] = pooled.numpy()
        return out

    def word_embeddings(self, raw: Any, spec: TaskSpec, max_length: int, batch_size: int,
                        part: str = "") -> tuple[list[np.ndarray], list[list[int]], list[int]]:
        """Per sentence, the first-sub-token vectors of the words the model sees, their word numbers, and
        the sentence's word count (words cut off by ``max_length`` get no vector)."""
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


def _desc(spec: TaskSpec, part: str) -> str:
    """The label of an encoding pass's progress bar: ``frozen BIOSSES test (left)``."""
    return " ".join(filter(None, ["frozen", spec.name, part]))


def load_encoder(source: str, precision: str = "fp32") -> Encoder:
    """The encoder of the last model asked for (a folder or hub id), kept so that a table of 15 baselines
    loads it once (keyed by the weights' fingerprint too, so a rebuilt model folder is loaded afresh)."""
    return _load_encoder(source, zoo.fingerprint(source), precision)


@functools.lru_cache(maxsize=1)
def _load_encoder(source: str, fingerprint: str, precision: str) -> Encoder:
    return Encoder(source, precision)


# --------------------------------------------------------------------------- probes


def _single_label_probe(x_train: np.ndarray, y_train: np.ndarray, n_classes: int, weighting: str,
                        c: float, settings: ProbeSettings) -> Any:
    """A fitted standardise + LogisticRegression pipeline; a training set with one class gets a constant."""
    from sklearn.dummy import DummyClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

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


def _metric(spec: TaskSpec, references: Sequence[Any], predictions: Sequence[Any],
            ids: Sequence[str]) -> dict[str, float]:
    return score(spec, references, predictions, list(ids))


@dataclass
class _Outcome:
    dev: dict[str, float]
    test: dict[str, float]
    predictions: list[Any]
    notes: list[str]
    settings: dict[str, Any]


def _decode_single(scores: np.ndarray, labels: Sequence[str]) -> list[str]:
    return [labels[int(i)] for i in np.argmax(scores, axis=1)]


def _cosine(encoder: Encoder, spec: TaskSpec, splits: Mapping[str, Any], caps: Mapping[str, Any],
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


def _sequence_probe(encoder: Encoder, spec: TaskSpec, splits: Mapping[str, Any], caps: Mapping[str, Any],
                    settings: ProbeSettings) -> _Outcome:
    """LogisticRegression (one-vs-rest for HoC) on mean-pooled embeddings; C and threshold picked on dev."""
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


def _token_probe(encoder: Encoder, spec: TaskSpec, splits: Mapping[str, Any], caps: Mapping[str, Any],
                 settings: ProbeSettings) -> _Outcome:
    """LogisticRegression on each word's first-sub-token vector; one tag per word, C picked on dev."""
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


def _splits(job: Job, data_root: Path) -> dict[str, Any]:
    """The capped splits the profile's fine-tuning run uses (the same subsample, seed and caps)."""
    caps = job.caps
    data = loaders.load_task(job.spec.name, data_root)
    splits, _ = features.capped_splits(
        {split: data[split] for split in ("train", "dev", "test") if split in data},
        {"train": caps["max_train_examples"], "dev": caps["max_dev_examples"], "test": caps["max_test_examples"]},
        SUBSET_SEED, "examples", job.profile.name)
    return splits


def score_interval(spec: TaskSpec, references: Sequence[Any], predictions: Sequence[Any], ids: Sequence[str],
                   resamples: int) -> tuple[float, float, int]:
    """Percentile-bootstrap 95 % interval of the test score over the dataset's resampling units (pairs for
    the IFT similarity sets)."""
    if spec.is_blurb:
        stats = units.unit_stats(spec.name, references, predictions, ids)
    else:
        stat = units.STATISTICS[spec.metric]
        rows = stat.rows(list(references), list(predictions), list(ids), None)
        stats = units.UnitStats(spec.name, spec.metric, "pair", tuple(ids), stat.columns, rows)
    interval = bootstrap_interval(stats, resamples=resamples)
    return interval.low, interval.high, interval.n_units


class FrozenKind:
    """Frozen-encoder baselines as a kind of run (:class:`medibio.runs.protocol.Kind`)."""

    name = KIND

    def replan(self, request: Mapping[str, Any], settings: Settings) -> Plan:
        saved = dict(request.get("probe") or {})
        probe = ProbeSettings(pooling=saved.get("pooling", "mean"),
                              token_position=saved.get("token_position", "first-subword"),
                              c_grid=tuple(saved.get("c_grid", ProbeSettings.c_grid)),
                              max_iter=int(saved.get("max_iter", ProbeSettings.max_iter)),
                              standardise=bool(saved.get("standardise", True)),
                              batch_size=int(saved.get("batch_size", ProbeSettings.batch_size)),
                              resamples=int(saved.get("resamples", ProbeSettings.resamples)))
        return plan_frozen(request["dataset"], request["model"], request["profile"],
                           request.get("overrides") or None, probe,
                           dataclasses.replace(settings, limit=request.get("limit")))

    def describe(self, record: rec.RunRecord) -> str:
        """``test 71.20 [69.80, 72.60]``, or why the baseline was skipped."""
        if not record.ok or record.score_test is None:
            return f"skipped: {record.reason}"
        low, high = record.test.get("ci95_low"), record.test.get("ci95_high")
        interval = f" [{low:.2f}, {high:.2f}]" if low is not None and high is not None else ""
        return f"test {record.score_test:.2f}{interval}"

    def train(self, plan: Plan, ctx: RunContext) -> Outcome:
        """Compute one baseline: its record and test predictions (none when skipped)."""
        job: Job = plan.job
        spec, data_root = job.spec, ctx.settings.data_root
        started = time.perf_counter()
        roots = {"cache_root": ctx.settings.cache_root, "results_root": ctx.settings.results_root}
        source = zoo.resolve(job.model, **roots)
        if job.method != "cosine" and spec.is_blurb:
            here = loaders.required_splits(spec.name, data_root)  # only a documented absence may be missing
            if "train" not in here:
                return Outcome(ctx.record(
                    model=zoo.model_info(job.model, **roots), status="skipped",
                    reason=f"train split absent in the data root (has {', '.join(here)}): no probe can be "
                           f"trained. {loaders.OPTIONAL_SPLITS[(spec.name, 'train')]}",
                    hyperparameters=dict(job.caps)))
        splits = _splits(job, data_root)
        encoder = load_encoder(source, job.probe.effective_precision)
        compute = {"cosine": _cosine, "probe": _sequence_probe, "token-probe": _token_probe}[job.method]
        outcome = compute(encoder, spec, splits, job.caps, job.probe)
        test = splits["test"]
        refs = features.references(test, Problem(spec.problem))
        low, high, n_units = score_interval(spec, refs, outcome.predictions, test["id"], job.probe.resamples)
        record = ctx.record(
            model=zoo.model_info(job.model, encoder.net, **roots),
            group=spec.group.value if spec.is_blurb else "IFT", problem=Problem(spec.problem).value,
            hyperparameters={**job.caps, **plan.payload["probe"], **outcome.settings}, dev=outcome.dev,
            test={**outcome.test, "ci95_low": low, "ci95_high": high, "units": n_units},
            score_dev=outcome.dev.get("score"), score_test=outcome.test.get("score"),
            train_examples=len(splits["train"]) if "train" in splits and job.method != "cosine" else 0,
            eval_examples=len(test), wall_time_s=round(time.perf_counter() - started, 2), notes=outcome.notes)
        preds = [{"id": i, "prediction": p} for i, p in zip(test["id"], outcome.predictions, strict=True)]
        return Outcome(record, preds)


FROZEN = FrozenKind()


def default_tasks(data_root: str | Path | None = None) -> list[str]:
    """Every BLURB dataset, then the intermediate similarity tasks in the data root."""
    return [*registry.names(), *similarity_tasks(data_root)]


def task_names(tasks: str | Sequence[str] | None, data_root: str | Path | None = None) -> list[str]:
    """``None``/``"all"``: :func:`default_tasks`; otherwise BLURB selections (groups, comma lists) and
    intermediate similarity task names."""
    if tasks is None or tasks == "all" or list(tasks) == ["all"]:
        return default_tasks(data_root)
    items = tasks.split(",") if isinstance(tasks, str) else list(tasks)
    out: list[str] = []
    for item in (i.strip() for i in items if i.strip()):
        if registry.is_blurb(item) or item.upper() in registry.Group.__members__ or item.lower() == "all":
            out.extend(s.name for s in registry.resolve(item))
        else:
            out.append(baseline_task(item).name)
    return list(dict.fromkeys(out))


COLUMNS = ("dataset", "group", "metric", "method", "frozen", "ci95_low", "ci95_high", "train_examples",
           "test_examples", "seconds", "reused", "digest", "status")


def baselines(profile: str | Profile = profiles.DEFAULT_PROFILE, tasks: str | Sequence[str] | None = None,
              model: str | None = None, overrides: Mapping[str, Any] | None = None,
              probe: ProbeSettings | None = None, force: bool = False,
              settings: Settings | None = None) -> pd.DataFrame:
    """One row per dataset: the frozen encoder's test score and its 95 % interval (records reused when
    they exist). ``tasks``: BLURB selection and/or STS-B, SICK-R (default: all of them). ``seconds`` is the
    time the record took to compute (also for reused ones)."""
    settings = settings or Settings()
    rows = []
    for name in task_names(tasks, settings.data_root):
        plan = plan_frozen(name, model, profile, overrides, probe, settings)
        record, reused = protocol.run(FROZEN, plan, settings, force=force)
        rows.append({"dataset": record.dataset, "group": record.group, "metric": plan.job.spec.metric,
                     "method": plan.job.method, "frozen": record.score_test,
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


__all__ = ["FROZEN", "KIND", "Encoder", "ProbeSettings", "baselines", "cosine_similarity", "default_tasks",
           "interval_text", "plan_frozen", "score_interval", "similarity_tasks", "task_names"]
