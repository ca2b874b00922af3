"""Uncertainty over test examples, and paired significance tests between systems, from run predictions.

Mean ± std over seeds says how much training varies; it says nothing about how much the score would move
on another sample of test examples, and a single-seed row has no spread at all. This module re-scores the
saved test predictions of run records (``record.predictions_file(root)``) on resamples of the test units
(:mod:`medibio.tasks.units`: sentences or documents for NER/PICO, abstracts for HoC, pairs or questions
otherwise). Each unit is reduced once to the sufficient statistics of its dataset's metric, so a resample
is a weighted sum: 1000 resamples of BC2GM's entity F1 take a fraction of a second instead of minutes of
seqeval (``benchmarks/significance_speed.py``).

* :func:`bootstrap_interval`: percentile bootstrap (Efron & Tibshirani 1993) of a run's test score, or of
  the mean over several seeds' runs, all scored on the same resampled units in each resample.
* :func:`paired_test`: systems A and B on the same test units; a system's score is the mean over its seeds
  (seed sets may differ). Reported: the difference of means, its percentile-bootstrap interval, and a
  two-sided p-value by one of :data:`METHODS`:

  - ``"bootstrap"`` (default): the paired bootstrap (Koehn 2004, "Statistical significance tests for
    machine translation evaluation"), with the p-value of the shift method of Berg-Kirkpatrick, Burkett
    & Klein (2012, "An empirical investigation of statistical significance in NLP"): the bootstrap
    distribution of the difference, centred on the observed difference d, approximates its null
    distribution, so p = P(|d* - d| >= |d|). The same resamples give the interval, and seeds pool
    naturally (every seed is scored on every resample).
  - ``"randomization"``: approximate randomisation (Noreen 1989, "Computer-intensive methods for testing
    hypotheses"; Riezler & Maxwell 2005), p = P(|d_perm| >= |d|). Per unit, the outputs of the two
    systems are swapped with probability 1/2; with several seeds, each unit's m + n run outputs are
    shuffled among A's m and B's n slots (under the null hypothesis all runs are exchangeable), which
    is the classic swap when m = n = 1.

  Both are among the tests Dror et al. (2018, "The Hitchhiker's Guide to Testing Statistical
  Significance in Natural Language Processing") recommend for metrics such as F1 whose distribution is
  unknown. Monte-Carlo p-values are (1 + hits) / (1 + resamples), never 0 (Davison & Hinkley 1997).

:func:`comparison_table` builds the rows the book prints (one per system pair and dataset), and
:func:`add_bootstrap_interval` adds a test-example interval to a :func:`medibio.results.aggregate.results_table`.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from medibio.core import workers
from medibio.core.errors import DataMissingError, InputFormatError, MedibioError
from medibio.core.hashing import file_sha256
from medibio.core.paths import data_root as resolve_data_root
from medibio.results import evidence_cache
from medibio.results.aggregate import newest_configurations
from medibio.runs.records import RunRecord, load_records
from medibio.tasks import loaders, predictions, registry
from medibio.tasks.bootstrap import (
    CONFIDENCE,
    DEFAULT_RESAMPLES,
    Interval,
    alpha_of,
    bootstrap_distribution,
    bootstrap_interval,
    bootstrap_p,
    bootstrap_weights,
    chunks,
    order_interval,
    percentile_interval,
    seed_weights,
    stack,
)
from medibio.tasks.units import UnitStats, score_from_sums, unit_stats

# Two floats closer than this (on the 0-100 scale) count as equal when a resampled difference is compared
# with the observed one: ties (frequent with accuracy) must count as "at least as extreme".
_TIE = 1e-9
_BLURB = frozenset(registry.names())


class SelectionError(MedibioError, ValueError):
    """A system selection (``profile/model/variant``) is malformed or matches no run record."""


# --------------------------------------------------------------------------- systems and their runs


@dataclass(frozen=True)
class System:
    """A set of runs: one ``profile/model/variant`` (all its seeds), e.g. ``cpu/minilm/ift-STS-B``."""

    profile: str
    model: str
    variant: str

    @classmethod
    def parse(cls, text: str | System) -> System:
        """``"profile/model/variant"`` -> System; the model may be a tag or anything ``model_tag`` reads."""
        if isinstance(text, System):
            return text
        parts = str(text).strip().split("/")
        if len(parts) != 3 or not all(p.strip() for p in parts):
            raise SelectionError(f"system {text!r}: expected PROFILE/MODEL/VARIANT, e.g. cpu/minilm/base")
        return cls(*(p.strip() for p in parts))

    def __str__(self) -> str:
        return f"{self.profile}/{self.model}/{self.variant}"

    def records(self, results_root: str | Path, dataset: str | None = None,
                config_digest: str | None = None) -> list[RunRecord]:
        """The system's records; where a dataset has runs of several configurations, only the newest
        configuration's (a system never pools runs made with different settings)."""
        found = load_records(results_root, profile=self.profile, model=self.model, variant=self.variant,
                             dataset=dataset, config_digest=config_digest)
        return newest_configurations(found)[0]


@dataclass(frozen=True)
class Runs:
    """The scored seeds of one system on one dataset: unit statistics on the same test units."""

    system: str
    dataset: str
    seeds: tuple[int, ...]
    files: tuple[Path, ...]
    ids: frozenset[str]
    stats: tuple[UnitStats, ...]
    # each run's pretrained model (e.g. its fingerprint); empty: every run fine-tunes the same one
    pretraining: tuple[str, ...] = ()

    @property
    def scores(self) -> list[float]:
        return [float(s.score()) for s in self.stats]

    @property
    def mean(self) -> float:
        return float(np.mean(self.scores))


def _gold(dataset: str, data_root: str) -> predictions.Gold:
    """The gold test split, read once per process while its files stay as they are (a worker scores dozens of
    files against one test set; a file edited meanwhile is read again)."""
    files = loaders.split_files(dataset, "test", data_root)
    if not all(f.is_file() for f in files):
        return predictions.load_gold(dataset, "test", data_root)  # which raises, naming the missing file
    return _gold_read(dataset, data_root, tuple((str(f), (st := f.stat()).st_mtime_ns, st.st_size) for f in files))


@functools.lru_cache(maxsize=16)
def _gold_read(dataset: str, data_root: str, files: tuple[tuple[str, int, int], ...]) -> predictions.Gold:
    return predictions.load_gold(dataset, "test", data_root)


FileKey = tuple[str, int, int, str, str]  # (resolved path, mtime_ns, size, dataset, data root)
# Each prediction file's scoring, kept per (file, mtime, size): the book compares each baseline with many
# variants. The oldest entry goes first beyond this many (an entry holds a test set's ids and unit counts).
_SCORED: dict[FileKey, tuple[UnitStats, frozenset[str]]] = {}
_SCORED_MAX = 512
# Prediction files handed to the workers and not collected yet (see score_side_by_side's ``wait``)
_PENDING: dict[FileKey, tuple[Future, Path | None]] = {}


def _file_stats(path: str, mtime_ns: int, size: int, dataset: str,
                data_root: str) -> tuple[UnitStats, frozenset[str]]:
    gold_files = loaders.split_files(dataset, "test", data_root) if evidence_cache.folder() else []
    if not gold_files or not all(f.is_file() for f in gold_files):
        return _score_file(path, dataset, data_root)  # no cache asked for, or no gold: said as always
    name = evidence_cache.key("unit-stats", {"predictions": file_sha256(path), "dataset": dataset,
                                             "gold": [file_sha256(f) for f in gold_files]})
    found = evidence_cache.load("unit-stats", name)
    if found is not None:
        meta, arrays = found
        stats = UnitStats(dataset, meta["metric"], meta["unit"], tuple(meta["keys"]), tuple(meta["columns"]),
                          arrays["counts"])
        return stats, frozenset(meta["ids"])
    stats, ids = _score_file(path, dataset, data_root)
    evidence_cache.save("unit-stats", name, {"metric": stats.metric, "unit": stats.unit, "keys": list(stats.keys),
                                             "columns": list(stats.columns), "ids": sorted(ids)},
                        {"counts": stats.counts})
    return stats, ids


def _score_file(path: str, dataset: str, data_root: str) -> tuple[UnitStats, frozenset[str]]:
    """Unit statistics of a prediction file against the gold test split, and the ids it covers."""
    gold = _gold(dataset, data_root)
    preds = predictions.read_predictions(path, dataset)
    covered = [i for i in gold.ids if i in preds]
    sub = gold
    if len(covered) < len(gold.ids):  # a file of some of the test examples: scored on those
        position = {i: k for k, i in enumerate(gold.ids)}
        sub = predictions.Gold(dataset, "test", covered, [gold.references[position[i]] for i in covered])
    values = predictions.align(path, preds, sub)  # ids outside the gold and tag counts are errors
    return unit_stats(dataset, sub.references, values, sub.ids), frozenset(covered)


def _file_key(path: str | Path, dataset: str, data_root: str | Path | None) -> FileKey:
    path = Path(path)
    if not path.is_file():
        raise DataMissingError(path, "the test predictions of a run (seed<N>.test.jsonl next to its record)")
    st = path.stat()
    return (str(path.resolve()), st.st_mtime_ns, st.st_size, registry.get(dataset).name,
            str(resolve_data_root(data_root)))


def _keep(key: FileKey, found: tuple[UnitStats, frozenset[str]]) -> None:
    if len(_SCORED) >= _SCORED_MAX:
        del _SCORED[next(iter(_SCORED))]
    _SCORED[key] = found


def prediction_stats(path: str | Path, dataset: str,
                     data_root: str | Path | None = None) -> tuple[UnitStats, frozenset[str]]:
    """Unit statistics of one test-prediction file and the ids it covers (a subset of the gold test ids).

    Kept per (file, size, mtime) in this process, and on disk by the file's and the gold's bytes where a
    boundary named a cache folder (:mod:`medibio.results.evidence_cache`).
    """
    key = _file_key(path, dataset, data_root)
    if key in _PENDING:
        _collect(key)
    if key not in _SCORED:
        _keep(key, _file_stats(*key))
    return _SCORED[key]


def _scored_apart(key: FileKey, cache: Path | None) -> tuple[UnitStats, frozenset[str]] | None:
    """:func:`_file_stats` in a worker process, under the caller's evidence cache; None for a file it refuses
    (the caller scores it again and raises the error in full, naming the file and line)."""
    # no cyclic collections while a file's lines become objects that stay alive to the end of the call (a
    # tenth of the scoring's CPU walked them again and again; the call leaves no cycles to collect)
    with evidence_cache.stored_in(None if cache is None else cache.parent), workers.no_collections():
        try:
            return _file_stats(*key)
        except MedibioError:
            return None


def _collect(key: FileKey) -> None:
    future, cache = _PENDING.pop(key)
    scored = workers.result(future, _scored_apart, (key, cache))
    if scored is not None:
        _keep(key, scored)


def score_side_by_side(files: Iterable[tuple[str | Path, str]], data_root: str | Path | None = None,
                       wait: bool = True) -> None:
    """Score the (prediction file, dataset) pairs not scored yet in this process in worker processes
    (:mod:`medibio.core.workers`), so that :func:`prediction_stats` finds them: reading and scoring a file is
    pure Python, one core's work, and a claim reads hundreds of them. ``wait=False`` returns at once: the files
    are scored while the caller does other work, and collected when :func:`prediction_stats` asks for them. A
    file a worker refuses is left to :func:`prediction_stats`, which raises the error as it always does."""
    todo = [k for k in dict.fromkeys(_file_key(f, d, data_root) for f, d in files) if k not in _SCORED]
    fresh = [k for k in todo if k not in _PENDING]
    cache = evidence_cache.folder()
    handed = (workers.submit(_scored_apart, [(key, cache) for key in fresh], [key[2] for key in fresh])
              if fresh and workers.apart(len(fresh), waited=wait) else None)
    if handed is not None:
        _PENDING.update((key, (future, cache)) for key, future in zip(fresh, handed, strict=True))
    if wait:
        for key in todo:
            if key in _PENDING:
                _collect(key)


def _describe_ids(ids: frozenset[str], other: frozenset[str]) -> str:
    only = sorted(ids - other)
    shown = ", ".join(repr(i) for i in only[:3]) + (" ..." if len(only) > 3 else "")
    return f"{len(ids)} ids, {len(only)} not in the other ({shown})" if only else f"{len(ids)} ids"


def _check_same_ids(a: tuple[Path, frozenset[str]], b: tuple[Path, frozenset[str]], what: str) -> None:
    if a[1] != b[1]:
        raise InputFormatError(
            b[0], None, f"{what}: predictions for the same test ids as {a[0]} ({_describe_ids(a[1], b[1])})",
            _describe_ids(b[1], a[1]),
        )


def system_runs(results_root: str | Path, system: str | System, dataset: str,
                data_root: str | Path | None = None, config_digest: str | None = None) -> Runs | None:
    """Every scored seed of ``system`` on ``dataset`` (None when there is none: skipped or never run).

    Records without a predictions entry are left out; a predictions entry whose file is missing is an
    error. All seeds must cover the same test ids (the smoke profile's capped test sets do).
    """
    system = System.parse(system)
    return runs_of(system.records(results_root, dataset, config_digest), results_root, str(system), dataset,
                   data_root)


def runs_of(records: Iterable[RunRecord], results_root: str | Path, label: str, dataset: str,
            data_root: str | Path | None = None,
            pretraining: Callable[[RunRecord], str] | None = None) -> Runs | None:
    """The scored seeds among ``records`` (e.g. what a run function returned) on ``dataset``, as
    :class:`Runs` named ``label``; None when none has test predictions. ``pretraining`` names each run's
    pretrained model (runs of one system fine-tuned from several pretraining seeds), for :func:`multi_bootstrap`."""
    name = registry.get(dataset).name
    recs = [r for r in records if r.dataset == name and r.ok and r.predictions]
    if not recs:
        return None
    limits = {r.limited for r in recs}
    if len(limits) > 1:
        raise SelectionError(f"{label} on {name} has runs made under different --limit values "
                             f"({', '.join('none' if x is None else str(x) for x in sorted(limits, key=str))}): "
                             "they are different experiments, not seeds of one system")
    limited = next(iter(limits))
    system = label if limited is None else f"{label} (LIMITED: --limit {limited})"
    keys, seeds, files, stats, first = [], [], [], [], None
    paths = [rec.predictions_file(results_root) for rec in recs]
    score_side_by_side(((path, name) for path in paths), data_root)
    for rec, path in zip(recs, paths, strict=True):
        key = (pretraining(rec) if pretraining else "", rec.seed)  # fine-tuning seed k of each pretrained model
        if key in keys:
            other = files[keys.index(key)]
            model = f" from {key[0]}" if key[0] else ""
            raise SelectionError(f"{system} has several runs of seed {rec.seed}{model} on {name} ({other} and "
                                 f"{path}): select one configuration")
        st, ids = prediction_stats(path, name, data_root)
        if first is None:
            first = (path, ids)
        _check_same_ids(first, (path, ids), f"every seed of {system} on {name}")
        keys.append(key)
        seeds.append(rec.seed)
        files.append(path)
        stats.append(st)
    labels = tuple(pretraining(r) for r in recs) if pretraining else ()
    return Runs(str(system), name, tuple(seeds), tuple(files), first[1], tuple(stats), labels)


def cv_runs(records: Iterable[RunRecord], results_root: str | Path, label: str, dataset: str,
            data_root: str | Path | None = None,
            pretraining: Callable[[RunRecord], str] | None = None) -> Runs | None:
    """The cross-validated seeds among ``records`` (runs with ``details.cv_fold``) as :class:`Runs` named
    ``label``: each seed's folds pooled, so that every example of the official splits is scored once, as a
    test example of its fold (:func:`medibio.training.features.cv_splits`). A seed lacking a fold is left out
    (the label says how many seeds are complete); None when no seed has every fold. ``pretraining`` names each
    run's pretrained model, as for :func:`runs_of`: a seed is then a seed of one pretrained model."""
    name = registry.get(dataset).name
    by_run: dict[tuple[str, int], dict[int, RunRecord]] = {}
    folds = 0
    for rec in records:
        if rec.dataset == name and rec.ok and rec.predictions and rec.details.get("cv_fold"):
            key = (pretraining(rec) if pretraining else "", rec.seed)
            by_run.setdefault(key, {})[int(rec.details["cv_fold"])] = rec
            folds = max(folds, int(rec.details.get("cv_folds", 0)))
    complete = sorted(key for key, got in by_run.items() if folds and len(got) == folds)
    if not complete:
        return None
    seeds = [seed for _, seed in complete]
    labels = tuple(model for model, _ in complete) if pretraining else ()
    root = str(resolve_data_root(data_root))
    paths = [{fold: by_run[key][fold].predictions_file(results_root) for fold in sorted(by_run[key])}
             for key in complete]
    models = len(set(labels))
    system = (f"{label} ({folds}-fold CV, {len(complete)} seeds"
              + (f" of {models} pretrained models)" if models > 1 else ")"))
    splits = [f for split in ("train", "dev", "test") for f in loaders.split_files(name, split, root)]
    cached = evidence_cache.folder() is not None and all(f.is_file() for f in splits + [f for seed in paths
                                                                                         for f in seed.values()])
    if cached:  # pooled folds scored once per their bytes and the gold's
        entry = evidence_cache.key("cv-unit-stats", {"dataset": name, "gold": [file_sha256(f) for f in splits],
                                                     "folds": [{str(k): file_sha256(f) for k, f in seed.items()}
                                                               for seed in paths]})
        found = evidence_cache.load("cv-unit-stats", entry)
        if found is not None:
            meta, arrays = found
            stats = [UnitStats(name, meta["metric"], meta["unit"], tuple(meta["keys"]), tuple(meta["columns"]),
                               arrays[f"counts{k}"]) for k in range(len(complete))]
            return Runs(system, name, tuple(seeds), tuple(seed[max(seed)].parent for seed in paths),
                        frozenset(meta["ids"]), tuple(stats), labels)
    runs = _pooled_cv_runs(name, root, seeds, paths, label, system)
    if cached:
        first = runs.stats[0]
        evidence_cache.save("cv-unit-stats", entry, {"metric": first.metric, "unit": first.unit, "keys": list(first.keys),
                                                     "columns": list(first.columns), "ids": sorted(runs.ids)},
                            {f"counts{k}": st.counts for k, st in enumerate(runs.stats)})
    return dataclasses.replace(runs, pretraining=labels)


def _pooled_cv_runs(name: str, root: str, complete: list[int], paths: list[dict[int, Path]], label: str,
                    system: str) -> Runs:
    """Each complete seed's fold predictions pooled and scored against the train, dev and test gold."""
    columns = [predictions.load_gold(name, split, root) for split in ("train", "dev", "test")]
    gold = predictions.Gold(name, "all", [i for g in columns for i in g.ids],
                                  [r for g in columns for r in g.references])
    stats, files = [], []
    for seed, seed_paths in zip(complete, paths, strict=True):
        pooled: dict[str, Any] = {}
        for fold, path in seed_paths.items():
            fold_predictions = predictions.read_predictions(path, name)
            twice = sorted(set(pooled) & set(fold_predictions))
            if twice:
                raise SelectionError(f"{label} seed {seed}: fold {fold} ({path}) scores examples another fold "
                                     f"scored too ({', '.join(twice[:3])}): not one cross-validation")
            pooled.update(fold_predictions)
        files.append(path.parent)  # the seed's folds lie in folders of their own; the last one names it
        values = predictions.align(path.parent, pooled, gold)
        stats.append(unit_stats(name, gold.references, values, gold.ids))
    return Runs(system, name, tuple(complete), tuple(files), frozenset(gold.ids), tuple(stats))


def _as_list(stats: UnitStats | Sequence[UnitStats] | Runs) -> list[UnitStats]:
    if isinstance(stats, Runs):
        return list(stats.stats)
    return [stats] if isinstance(stats, UnitStats) else list(stats)


def monte_carlo_p(null: np.ndarray, observed: float) -> float:
    """(1 + #{|null| >= |observed|}) / (1 + len(null)): a Monte-Carlo p-value that is never 0."""
    hits = int(np.count_nonzero(np.abs(null) >= abs(observed) - _TIE))
    return (1 + hits) / (1 + len(null))


def _bootstrap_p(diffs: np.ndarray, observed: float, counts: np.ndarray, m: int, metric: str,
                 resamples: int, seed: int) -> float:
    return monte_carlo_p(diffs - observed, observed)


def _randomization_p(diffs: np.ndarray, observed: float, counts: np.ndarray, m: int, metric: str,
                     resamples: int, seed: int) -> float:
    n_units, n_runs, _k = counts.shape
    rng = np.random.default_rng([seed, 1])
    units = np.arange(n_units)[None, :, None]
    null = []
    for size in chunks(resamples, counts.size * 2):
        perm = np.argsort(rng.random((size, n_units, n_runs)), axis=-1)
        sums = counts[units, perm].sum(axis=1)  # (size, n_runs, k): slot j of each unit gets run perm[j]
        scores = score_from_sums(metric, sums)
        null.append(scores[:, :m].mean(axis=1) - scores[:, m:].mean(axis=1))
    return monte_carlo_p(np.concatenate(null), observed)


@dataclass(frozen=True)
class Method:
    """A p-value method of :func:`paired_test` and the references that define it."""

    name: str
    citation: str
    p_value: Callable[..., float]


METHODS: dict[str, Method] = {
    "bootstrap": Method("paired bootstrap",
                        "paired bootstrap (Koehn 2004), two-sided p by the shift method "
                        "(Berg-Kirkpatrick et al. 2012)", _bootstrap_p),
    "randomization": Method("approximate randomisation",
                            "approximate randomisation (Noreen 1989; Riezler & Maxwell 2005), two-sided",
                            _randomization_p),
}


@dataclass(frozen=True)
class Comparison:
    """A minus B on one dataset: means over seeds, the difference, its interval and a two-sided p-value."""

    dataset: str
    mean_a: float
    mean_b: float
    diff: float
    low: float
    high: float
    p_value: float
    n_units: int
    unit: str
    seeds_a: tuple[int, ...]
    seeds_b: tuple[int, ...]
    method: str
    resamples: int
    confidence: float = CONFIDENCE
    a: str = "A"
    b: str = "B"
    files_a: tuple[str, ...] = field(default=())
    files_b: tuple[str, ...] = field(default=())

    @property
    def significant(self) -> bool:
        """p below 1 - confidence (0.05 at 95%)."""
        return self.p_value < alpha_of(self.confidence)

    @property
    def citation(self) -> str:
        return METHODS[self.method].citation

    def to_dict(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "dataset": self.dataset, "unit": self.unit, "n_units": self.n_units,
                "seeds_a": list(self.seeds_a), "seeds_b": list(self.seeds_b), "mean_a": self.mean_a,
                "mean_b": self.mean_b, "diff": self.diff, "low": self.low, "high": self.high,
                "p": self.p_value, "significant": self.significant, "confidence": self.confidence,
                "method": self.method, "citation": self.citation, "resamples": self.resamples,
                "files_a": list(self.files_a), "files_b": list(self.files_b)}


def paired_test(a: UnitStats | Sequence[UnitStats] | Runs, b: UnitStats | Sequence[UnitStats] | Runs,
                resamples: int = DEFAULT_RESAMPLES, seed: int = 0, method: str = "bootstrap",
                confidence: float = CONFIDENCE) -> Comparison:
    """Compare systems A and B (one or several runs each) on the same test units; see the module docstring.

    The interval is always the paired percentile bootstrap of (mean over A's runs - mean over B's runs);
    ``method`` picks how the p-value is computed.
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; known: {', '.join(METHODS)}")
    if resamples < 1:
        raise ValueError(f"resamples must be positive, got {resamples}")
    runs_a, runs_b = _as_list(a), _as_list(b)
    m = len(runs_a)
    stats = runs_a + runs_b
    counts = stack(stats)
    metric = stats[0].metric
    full = score_from_sums(metric, counts.sum(axis=0))
    mean_a, mean_b = float(full[:m].mean()), float(full[m:].mean())
    observed = mean_a - mean_b
    boot = bootstrap_distribution(stats, resamples, seed)
    diffs = boot[:, :m].mean(axis=1) - boot[:, m:].mean(axis=1)
    low, high = percentile_interval(diffs, confidence)
    p = METHODS[method].p_value(diffs, observed, counts, m, metric, resamples, seed)
    seeds = [r.seeds if isinstance(r, Runs) else tuple(range(1, len(_as_list(r)) + 1)) for r in (a, b)]
    names = [r.system if isinstance(r, Runs) else label for r, label in ((a, "A"), (b, "B"))]
    files = [tuple(str(f) for f in r.files) if isinstance(r, Runs) else () for r in (a, b)]
    return Comparison(stats[0].dataset, mean_a, mean_b, observed, low, high, p, stats[0].n_units,
                      stats[0].unit, seeds[0], seeds[1], method, resamples, confidence, names[0], names[1],
                      files[0], files[1])


# --------------------------------------------------------------------------- the multi-bootstrap of a claim

VERDICT_RESAMPLES = 4999  # p in steps of 1/5000; the 95% interval is [d_(125), d_(4875)]


@dataclass(frozen=True)
class MultiComparison:
    """A − B for one statistic (a mean over datasets of per-dataset differences) under the multi-bootstrap:
    the observed difference, the interval and p-value read from the same draws (:func:`order_interval`,
    :func:`bootstrap_p`: the interval excludes 0 if and only if p < 1 − confidence), and what was resampled."""

    label: str
    datasets: tuple[str, ...]
    diff: float
    low: float
    high: float
    p_value: float
    resamples: int
    confidence: float
    units: tuple[int, ...]  # test units per dataset
    runs_a: tuple[int, ...]  # fine-tuning runs per dataset
    runs_b: tuple[int, ...]
    pretraining_a: int  # pretrained models of each system (1: fine-tuning seeds only)
    pretraining_b: int
    draws: np.ndarray = field(repr=False, compare=False)

    @property
    def resampled(self) -> str:
        """What the draws resample, in words."""
        levels = ["test units"]
        if max(self.runs_a + self.runs_b) > 1:
            levels.append("fine-tuning seeds")
        if max(self.pretraining_a, self.pretraining_b) > 1:
            levels.append("pretraining seeds")
        return ", ".join(levels)

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "datasets": list(self.datasets), "diff": self.diff, "low": self.low,
                "high": self.high, "p": self.p_value, "resamples": self.resamples, "confidence": self.confidence,
                "units": list(self.units), "runs_a": list(self.runs_a), "runs_b": list(self.runs_b),
                "pretraining_a": self.pretraining_a, "pretraining_b": self.pretraining_b,
                "resampled": self.resampled, "interval": "percentile (order statistics), "
                f"{self.resamples} multi-bootstrap draws"}


def _groups(runs: Runs, labels: list[str]) -> list[int]:
    return [labels.index(x) for x in runs.pretraining] if runs.pretraining else [0] * len(runs.stats)


def _system_labels(side: Sequence[Runs]) -> list[str]:
    return sorted({x for r in side for x in r.pretraining}) or [""]


def _observed(runs: Runs, groups: list[int]) -> float:
    scores = np.array(runs.scores)
    return float(np.mean([scores[np.array(groups) == g].mean() for g in sorted(set(groups))]))


def multi_bootstrap(pairs: Sequence[tuple[Runs, Runs]], statistics: Mapping[str, Sequence[str]] | None = None,
                    resamples: int = VERDICT_RESAMPLES, seed: int = 0,
                    confidence: float = CONFIDENCE) -> dict[str, MultiComparison]:
    """A − B under the multi-bootstrap (Sellam et al. 2022), for systems given as (A's runs, B's runs) per dataset.

    Each draw resamples, for every dataset on its own, the test units (shared by A and B: a paired design) and
    each system's runs hierarchically (:func:`medibio.tasks.bootstrap.seed_weights`: its pretraining seeds,
    drawn once per draw for all datasets since every dataset is fine-tuned from the same pretrained models,
    then the fine-tuning seeds of each), so the spread holds every source of variation between two builds.
    A and B's seeds are drawn independently: seed k of A and seed k of B are different training runs.
    ``statistics`` maps a label to the datasets whose mean difference it is (default: ``mean`` of all);
    every statistic reads the same draws. The random draws depend only on ``seed``, the datasets' order and
    the numbers of units and runs, never on scores, so a rebuild whose predictions moved a little moves every
    draw a little (common random numbers) and a verdict flips only where an interval end crosses a boundary.
    Where a boundary named a cache folder (:mod:`medibio.results.evidence_cache`), the result is kept there
    under a digest of the runs' unit counts, seeds and sizes, and read back by the next call with the same.
    """
    if not pairs:
        raise ValueError("no dataset with runs of both systems")
    names = [a.dataset for a, _ in pairs]
    if len(set(names)) != len(names):
        raise ValueError(f"each dataset once: {', '.join(names)}")
    statistics = statistics or {"mean": names}
    if evidence_cache.folder() is None:
        return _multi_bootstrap(pairs, statistics, resamples, seed, confidence)
    name = evidence_cache.key("multi-bootstrap", {
        "pairs": [[_runs_digest(side) for side in pair] for pair in pairs],
        "statistics": {k: list(v) for k, v in statistics.items()}, "resamples": resamples, "seed": seed,
        "confidence": confidence})
    found = evidence_cache.load("multi-bootstrap", name)
    if found is not None:
        meta, arrays = found
        return {label: MultiComparison(**{**fields, "datasets": tuple(fields["datasets"]),
                                          **{k: tuple(fields[k]) for k in ("units", "runs_a", "runs_b")}},
                                       draws=arrays[f"draws{i}"])
                for i, (label, fields) in enumerate(meta["results"])}
    result = _multi_bootstrap(pairs, statistics, resamples, seed, confidence)
    evidence_cache.save("multi-bootstrap", name,
                        {"results": [[label, _comparison_fields(c)] for label, c in result.items()]},
                        {f"draws{i}": c.draws for i, c in enumerate(result.values())})
    return result


def _runs_digest(runs: Runs) -> dict[str, Any]:
    """What the draws and the scores of one side of a pair depend on (never its label or files)."""
    return {"dataset": runs.dataset, "pretraining": list(runs.pretraining),
            "ids": evidence_cache.text_digest(sorted(runs.ids)),
            "stats": [[s.metric, evidence_cache.text_digest(s.keys), evidence_cache.array_digest(s.counts)]
                      for s in runs.stats]}


def _comparison_fields(found: MultiComparison) -> dict[str, Any]:
    out = {f.name: getattr(found, f.name) for f in dataclasses.fields(found) if f.name != "draws"}
    return {k: list(v) if isinstance(v, tuple) else v for k, v in out.items()}


def _multi_bootstrap(pairs: Sequence[tuple[Runs, Runs]], statistics: Mapping[str, Sequence[str]], resamples: int,
                     seed: int, confidence: float) -> dict[str, MultiComparison]:
    names = [a.dataset for a, _ in pairs]
    labels = [_system_labels([p[i] for p in pairs]) for i in (0, 1)]
    pre_rng = np.random.default_rng([seed, 2])
    pre = [bootstrap_weights(len(x), resamples, pre_rng) for x in labels]
    diffs, observed, units, runs = {}, {}, [], ([], [])
    for k, (ra, rb) in enumerate(pairs):
        if ra.dataset != rb.dataset:
            raise ValueError(f"pair {k}: A is on {ra.dataset}, B on {rb.dataset}")
        _check_same_ids((Path(ra.files[0] if ra.files else ra.system), ra.ids),
                        (Path(rb.files[0] if rb.files else rb.system), rb.ids),
                        f"{rb.system} vs {ra.system} on {ra.dataset}")
    # each dataset's units are drawn by a generator of its own: drawn side by side, they are the same draws
    unit_draws = workers.side_by_side(bootstrap_distribution,
                                      [([*ra.stats, *rb.stats], resamples, seed * 1000 + k) for k, (ra, rb) in enumerate(pairs)],
                                      [ra.stats[0].n_units * (len(ra.stats) + len(rb.stats)) for ra, rb in pairs])
    for k, ((ra, rb), scores) in enumerate(zip(pairs, unit_draws, strict=True)):
        rng = np.random.default_rng([seed, k, 1])
        m, out = len(ra.stats), []
        for side, part, i in ((ra, scores[:, :m], 0), (rb, scores[:, m:], 1)):
            groups = _groups(side, labels[i])
            if len(set(groups)) != len(labels[i]):
                raise ValueError(f"{side.system} on {side.dataset}: runs of {len(set(groups))} of its "
                                 f"{len(labels[i])} pretrained models; each dataset needs runs of every one")
            weights = seed_weights(groups, resamples, rng, pre[i])
            out.append(((part * weights).sum(axis=1), _observed(side, groups)))
            runs[i].append(len(side.stats))
        diffs[ra.dataset] = out[0][0] - out[1][0]
        observed[ra.dataset] = out[0][1] - out[1][1]
        units.append(ra.stats[0].n_units)
    result = {}
    for label, chosen in statistics.items():
        used = [d for d in names if d in set(chosen)]
        if not used:
            continue
        draws = np.mean([diffs[d] for d in used], axis=0)
        low, high = order_interval(draws, confidence)
        idx = [names.index(d) for d in used]
        result[label] = MultiComparison(
            label, tuple(used), float(np.mean([observed[d] for d in used])), low, high, bootstrap_p(draws),
            resamples, confidence, tuple(units[i] for i in idx), tuple(runs[0][i] for i in idx),
            tuple(runs[1][i] for i in idx), len(labels[0]), len(labels[1]), draws)
    return result


# --------------------------------------------------------------------------- systems on a results root


def _datasets(selection: str | Sequence[str] | None) -> list[str]:
    try:
        return [s.name for s in registry.resolve(selection)]
    except KeyError as exc:
        raise SelectionError(str(exc.args[0])) from None


def _known_systems(results_root: str | Path) -> str:
    found = sorted({f"{r.profile}/{r.model_tag}/{r.variant}" for r in load_records(results_root)})
    return ", ".join(found) if found else "none"


def _require(results_root: str | Path, system: System) -> None:
    if not system.records(results_root):
        raise SelectionError(f"no run records match {system} under {Path(results_root) / 'finetune'} "
                             f"(systems there: {_known_systems(results_root)})")


def compare_systems(results_root: str | Path, a: str | System, b: str | System,
                    datasets: str | Sequence[str] | None = None, resamples: int = DEFAULT_RESAMPLES,
                    seed: int = 0, method: str = "bootstrap", confidence: float = CONFIDENCE,
                    data_root: str | Path | None = None) -> tuple[list[Comparison], list[str]]:
    """Paired tests of A vs B on every selected dataset both have scored runs for.

    Returns (comparisons in BLURB order, datasets left out with the reason). A selection that matches no
    record at all raises :class:`SelectionError`.
    """
    sa, sb = System.parse(a), System.parse(b)
    for s in (sa, sb):
        _require(results_root, s)
    out: list[Comparison] = []
    left_out: list[str] = []
    for name in _datasets(datasets):
        # which datasets both have, before any test split is read for one side alone
        have = [any(r.ok and r.predictions for r in s.records(results_root, name)) for s in (sa, sb)]
        if not all(have):
            if any(have):
                left_out.append(f"{name}: no scored runs with predictions for {sb if have[0] else sa}")
            continue
        ra = system_runs(results_root, sa, name, data_root)
        rb = system_runs(results_root, sb, name, data_root)
        if ra is None or rb is None:
            if ra is not None or rb is not None:
                left_out.append(f"{name}: no scored runs with predictions for {sb if ra else sa}")
            continue
        _check_same_ids((ra.files[0], ra.ids), (rb.files[0], rb.ids), f"{sb} vs {sa} on {name}")
        out.append(paired_test(ra, rb, resamples, seed, method, confidence))
    return out, left_out


def compare_records(a: Iterable[RunRecord], b: Iterable[RunRecord], results_root: str | Path, dataset: str,
                    label_a: str = "A", label_b: str = "B", resamples: int = DEFAULT_RESAMPLES, seed: int = 0,
                    method: str = "bootstrap", confidence: float = CONFIDENCE,
                    data_root: str | Path | None = None) -> Comparison | None:
    """Paired test of two sets of run records (what the book's run functions return) on one dataset;
    None when either side has no scored run with predictions."""
    ra = runs_of(a, results_root, label_a, dataset, data_root)
    rb = runs_of(b, results_root, label_b, dataset, data_root)
    if ra is None or rb is None:
        return None
    _check_same_ids((ra.files[0], ra.ids), (rb.files[0], rb.ids), f"{label_b} vs {label_a} on {dataset}")
    return paired_test(ra, rb, resamples, seed, method, confidence)


def records_interval(records: Iterable[RunRecord], results_root: str | Path, dataset: str,
                     resamples: int = DEFAULT_RESAMPLES, seed: int = 0, confidence: float = CONFIDENCE,
                     data_root: str | Path | None = None) -> Interval | None:
    """Bootstrap interval over test units of the mean over ``records``' seeds on ``dataset`` (what a run
    function returned); None when none of them has test predictions."""
    runs = runs_of(records, results_root, "runs", dataset, data_root)
    return None if runs is None else bootstrap_interval(runs.stats, resamples, seed, confidence)


def compare_groups(groups: Mapping[str, Iterable[RunRecord]], results_root: str | Path,
                   data_root: str | Path | None = None, resamples: int = DEFAULT_RESAMPLES, seed: int = 0,
                   method: str = "bootstrap", confidence: float = CONFIDENCE) -> pd.DataFrame:
    """Every pair of labelled record sets (e.g. one per model) on every dataset both have: the book's
    model-vs-model table, one row per (A, B, dataset)."""
    sets = {label: list(recs) for label, recs in groups.items()}
    found = []
    for (la, ra), (lb, rb) in itertools.combinations(sets.items(), 2):
        for dataset in [d for d in registry.names() if any(r.dataset == d for r in ra)
                        and any(r.dataset == d for r in rb)]:
            test = compare_records(ra, rb, results_root, dataset, la, lb, resamples, seed, method, confidence,
                                   data_root)
            if test is not None:
                found.append(test)
    return comparison_frame(found)


def interval_text(low: float, high: float) -> str:
    """``[61.20, 70.05]``, or empty when there is no interval."""
    return "" if math.isnan(low) or math.isnan(high) else f"[{low:.2f}, {high:.2f}]"


COMPARISON_COLUMNS = ("a", "b", "dataset", "unit", "n_units", "seeds_a", "seeds_b", "mean_a", "mean_b",
                      "diff", "low", "high", "p", "significant", "method")


def comparison_frame(comparisons: Iterable[Comparison]) -> pd.DataFrame:
    """Comparisons as a DataFrame with :data:`COMPARISON_COLUMNS`."""
    rows = [{k: v for k, v in c.to_dict().items() if k in COMPARISON_COLUMNS} for c in comparisons]
    return pd.DataFrame(rows, columns=list(COMPARISON_COLUMNS))


def comparison_table(results_root: str | Path, pairs: Iterable[tuple[str | System, str | System]],
                     datasets: str | Sequence[str] | None = None, resamples: int = DEFAULT_RESAMPLES,
                     seed: int = 0, method: str = "bootstrap", confidence: float = CONFIDENCE,
                     data_root: str | Path | None = None) -> pd.DataFrame:
    """One row per (A, B, dataset) for every pair of systems: the book's significance table."""
    found: list[Comparison] = []
    for a, b in pairs:
        found.extend(compare_systems(results_root, a, b, datasets, resamples, seed, method, confidence,
                                     data_root)[0])
    return comparison_frame(found)


def add_bootstrap_interval(df: pd.DataFrame, results_root: str | Path, resamples: int = DEFAULT_RESAMPLES,
                           seed: int = 0, confidence: float = CONFIDENCE,
                           data_root: str | Path | None = None) -> pd.DataFrame:
    """Add ``boot_low``, ``boot_high`` and ``units`` to the dataset rows of a ``results_table`` frame.

    The interval is over test units (not seeds): the mean over the row's seeds, every seed scored on the
    same resamples, so single-seed rows get one too. Group and aggregate rows, and rows whose runs have
    no predictions, get NaN.
    """
    out = df.copy()
    low, high, units = [], [], []
    for _, row in out.iterrows():
        runs = None
        if row.get("level") == "dataset" and row["row"] in _BLURB and not pd.isna(row["n"]) and row["n"] > 0:
            digest = row.get("digest")
            runs = system_runs(results_root, System(row["profile"], row["model"], row["variant"]), row["row"],
                               data_root, config_digest=digest if digest and digest != "legacy" else None)
        if runs is not None and set(runs.seeds) != set(row["seeds"]):
            runs = None  # predictions do not cover the seeds the row averages
        if runs is None:
            low.append(math.nan)
            high.append(math.nan)
            units.append(pd.NA)
            continue
        iv = bootstrap_interval(runs.stats, resamples, seed, confidence)
        low.append(iv.low)
        high.append(iv.high)
        units.append(iv.n_units)
    out["boot_low"] = low
    out["boot_high"] = high
    out["units"] = pd.array(units, dtype="Int64")
    return out



# --------------------------------------------------------------------------- text output


def _num(x: float, digits: int = 2) -> str:
    return "" if x is None or math.isnan(x) else f"{x:.{digits}f}"


def _p_text(p: float) -> str:
    return f"{p:.3f}" if p >= 0.001 else f"{p:.1e}"


def format_comparisons(comparisons: Sequence[Comparison], left_out: Sequence[str] = ()) -> str:
    """A text table (one row per dataset); a footer names the test, the resamples and what was left out."""
    if not comparisons:
        lines = ["no dataset has scored runs with predictions for both systems"]
        return "\n".join(lines + [f"  left out: {x}" for x in left_out])
    first = comparisons[0]
    pct = f"{100 * first.confidence:g}%"
    frame = pd.DataFrame({
        "dataset": [c.dataset for c in comparisons],
        "A": [_num(c.mean_a) for c in comparisons],
        "B": [_num(c.mean_b) for c in comparisons],
        "A-B": [f"{c.diff:+.2f}" for c in comparisons],
        f"{pct} interval": [f"[{c.low:+.2f}, {c.high:+.2f}]" for c in comparisons],
        "p": [_p_text(c.p_value) for c in comparisons],
        f"significant at {pct}": ["yes" if c.significant else "no" for c in comparisons],
        "seeds A": [len(c.seeds_a) for c in comparisons],
        "seeds B": [len(c.seeds_b) for c in comparisons],
        "units": [f"{c.n_units} {c.unit}s" for c in comparisons],
    })
    lines = [f"A = {first.a}", f"B = {first.b}", frame.to_string(index=False),
             f"test: {first.citation}; {first.resamples} resamples of the test units; interval: paired "
             f"percentile bootstrap; each system's score is the mean over its seeds"]
    lines.extend(f"left out: {x}" for x in left_out)
    return "\n".join(lines)
