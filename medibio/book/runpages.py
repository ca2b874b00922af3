"""Run pages: from a number in a table to the run behind it and each of its test predictions.

A table cell of the book is a mean over the seeds of one configuration (kind, profile, model, variant,
dataset and configuration digest: :class:`medibio.runs.identity.RunKey` without the seed). Each such
configuration gets one static page under ``_build/html/runs/`` (:func:`run_page_url`) written after
jupyter-book (:func:`write_run_pages`, called by :func:`medibio.book.build.build_book`), so Sphinx never
sees it. A page shows what the record holds — configuration, caps, environment and commit, dev and test
scores per seed, the dev curve, wall time and compute — the frozen-encoder and constant-answer baselines of
the same dataset, the record and predictions files to download with their SHA-256, and every test example
with its gold and prediction: filtered by correct/incorrect or by error kind, searched by id, and paged in
the browser (50 rows at a time, so JNLPBA's 3,856 test sentences load at once). NER and SciERC examples show
gold and predicted spans coloured by error kind (:mod:`medibio.book.spans`), with a count table per seed.

A paired page (:func:`paired_page_url`) sets a fine-tuning run after an intermediate task beside direct
fine-tuning on the same test examples — the comparison the book tests with a paired bootstrap — and lists
the examples on which one of the two is right and the other wrong.

:func:`table_links` and :func:`cell_links` give the chapters' tables the ``links`` of
:meth:`medibio.book.notebook.ChapterContext.table`: (row label, column label) -> the URL of a run page,
relative to the HTML root.
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import re
import shutil
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Integral
from pathlib import Path
from typing import Any

import orjson
import pandas as pd

from medibio.baselines import constant
from medibio.book import spans
from medibio.book.notebook import label_text
from medibio.book.numbers import yes_no
from medibio.core import profiles, workers
from medibio.core.atomic import atomic_open, write_text
from medibio.core.errors import MedibioError
from medibio.core.text import file_bytes
from medibio.experiments.ift import RECORDED
from medibio.experiments.table5 import STUDY
from medibio.finetune.variants import fold_of
from medibio.ift import variants
from medibio.models import zoo
from medibio.paper import tables as paper_tables
from medibio.results.aggregate import newest_configurations
from medibio.results.recorded import REFERENCE_ROOT
from medibio.results.significance import compare_records
from medibio.runs.records import BASE_VARIANT, KINDS, RunRecord, checked_content, load_records
from medibio.tasks import loaders, registry, scierc_predictions
from medibio.tasks import predictions as blurb_predictions
from medibio.tasks import scierc as scierc_data
from medibio.tasks.spec import Problem

RUNS_DIR = "runs"
TEMPLATES = Path(__file__).with_name("templates")
ASSETS = ("runpages.css", "runpages.js")
PAGE_SIZE = 50  # rows the browser renders at a time
# a BIOSSES prediction counts as right within half a point of the gold score on its 0-4 scale (the view's
# choice: a regression has no right or wrong of its own)
SCORE_TOLERANCE = 0.5
FROZEN_COLUMNS = ("frozen encoder", "frozen 95% CI")  # the frozen-baseline columns of the results tables
# the recorded profiles whose runs the claims page of a profile judges (medibio.book.verdicts reads them): their
# runs get pages too, so that every tested verdict leads to the runs behind it
READ_BESIDE = {profiles.DEFAULT_PROFILE: (RECORDED.profile, STUDY.profile)}  # the cpu book


def has_pages(build_profile: str, record_profile: str) -> bool:
    """Whether a build of ``build_profile`` writes run pages for the runs of ``record_profile`` (its own, and the
    recorded profiles its claims read): a chapter links a run only where its page will exist, whatever other
    profiles' records share the results root."""
    return record_profile == build_profile or record_profile in READ_BESIDE.get(build_profile, ())


def recorded_runs(results_root: str | Path, build_profile: str, profile: str) -> tuple[list[RunRecord], bool]:
    """The fine-tuning runs of a recorded profile (``cpu-ift``) a chapter shows, and whether to link them to
    their pages: this build's results root's where it holds them (a build from reference/ copies them there),
    linked where the build writes their pages; else reference/'s, unlinked."""
    here = load_records(results_root, profile=profile, kind="finetune", legacy=False)
    if here:
        return here, has_pages(build_profile, profile)
    return load_records(REFERENCE_ROOT, profile=profile, kind="finetune", legacy=False), False


# test predictions above this many characters go to a script file beside the page, not into it: a page stays
# under 1 MB (ChemProt's three seeds are 5 MB of JSON) and still opens from disk (a <script src> needs no server)
INLINE_EXAMPLES = 400_000


# what a task's test score measures, in words: the lead of a run page names it (a SciERC score is a mean of three F1)
METRIC_NAMES = {
    "ner_entity_f1": "entity-level F1", "pico_token_macro_f1": "token-level macro F1", "re_micro_f1": "micro F1",
    "re_binary_f1": "F1 of the positive class", "pearson": "Pearson r × 100", "hoc_micro_f1": "micro F1 over hallmarks",
    "accuracy": "accuracy", "kendall_tau": "Kendall's τ", "macro_f1": "macro F1",
    "multilabel_macro_f1": "macro F1 over labels",
    "scierc": "the mean of entity (NER), relation (JRE) and coreference F1",
}
# metrics a constant prediction leaves undefined (a correlation needs a prediction that varies)
UNDEFINED_FOR_CONSTANT = frozenset({"pearson", "kendall_tau"})


def metric_name(dataset: str) -> str:
    """The metric of ``dataset``'s test score in words ("" for a task the registry does not know)."""
    try:
        metric = registry.get(dataset).metric
    except MedibioError:
        return ""
    return METRIC_NAMES.get(metric, metric.replace("_", " "))


def run_page_url(record: RunRecord) -> str:
    """Where the page of ``record``'s configuration (all its seeds) is, relative to the HTML root:
    ``runs/<kind>/<profile>/<model>/<variant>/<dataset>/<digest>/index.html``."""
    key = record.key
    parts = (RUNS_DIR, key.kind, key.profile, key.model_tag, key.variant, key.dataset, key.config_digest)
    return "/".join(parts) + "/index.html"


def paired_page_url(a: RunRecord, b: RunRecord) -> str:
    """The paired view of configuration ``a`` against ``b`` (same dataset), relative to the HTML root."""
    return (f"{RUNS_DIR}/paired/{a.profile}/{a.model_tag}/{a.dataset}/"
            f"{a.variant}-{a.config_digest}-vs-{b.variant}-{b.config_digest}/index.html")


# --------------------------------------------------------------------------- configurations


@dataclass
class Configuration:
    """All seeds of one configuration: what one run page shows."""

    records: list[RunRecord]

    @property
    def first(self) -> RunRecord:
        return self.records[0]

    @property
    def url(self) -> str:
        return run_page_url(self.first)

    @property
    def title(self) -> str:
        r = self.first
        return f"{r.dataset} — {r.model_tag}, {r.variant} ({r.kind}, {r.profile})"

    @property
    def scored(self) -> list[RunRecord]:
        return [r for r in self.records if r.ok and r.score_test is not None]

    @property
    def test_mean(self) -> float | None:
        scores = [float(r.score_test) for r in self.scored]
        return statistics.fmean(scores) if scores else None

    @property
    def fold(self) -> int | None:
        """The cross-validation fold this configuration was tested on (its own examples of the pooled splits,
        not the official test split), or None."""
        return self.first.details.get("cv_fold") or None


def configurations(results_root: str | Path, profile: str) -> list[Configuration]:
    """Every configuration with a record of this schema under ``results_root`` for ``profile``, any kind
    (pretraining runs are filed under the profile's pretraining configuration, e.g. ``mini`` for ``cpu``)."""
    out: dict[Path, list[RunRecord]] = {}
    for kind in KINDS:
        for record in load_records(results_root, profile=profiles.filed_under(profile, kind), kind=kind,
                                   legacy=False):
            out.setdefault(record.path(results_root).parent, []).append(record)
    return [Configuration(sorted(recs, key=lambda r: r.seed)) for _, recs in sorted(out.items())]


# --------------------------------------------------------------------------- examples


@dataclass
class Examples:
    """The test examples of one configuration, per seed: the rows the page's script renders.

    ``mode`` says how a row reads: ``ner`` (words, classified spans), ``scierc`` (a document with entities,
    relations and coreference), ``label``, ``labels`` (HoC's hallmark sets) or ``score`` (BIOSSES)."""

    mode: str
    seeds: list[int]
    rows: list[dict[str, Any]]
    counts: dict[int, dict[str, int]] = field(default_factory=dict)  # seed -> error kind -> count
    # A BLURB row names its text by its position ``i`` in the test set's ``texts``, which every page of the
    # dataset reads from one script (``texts_url``, under the HTML root): inline, the texts were most of each
    # page's JSON, written again for every configuration (647 MB of run pages for the cpu book)
    texts: Sequence[Any] | None = None
    texts_url: str = ""

    def correct(self, seed: int) -> dict[str, bool]:
        return {row["id"]: bool(row["ok"][str(seed)]) for row in self.rows}

    def payload(self) -> dict[str, Any]:
        kinds = {"ner": spans.KINDS, "scierc": spans.KINDS}.get(self.mode, ())
        return {"mode": self.mode, "seeds": [str(s) for s in self.seeds], "kinds": list(kinds),
                "pageSize": PAGE_SIZE, "rows": self.rows}


def _mode(dataset: str) -> str:
    problem = registry.get(dataset, "blurb").problem
    return {Problem.TOKEN: "ner", Problem.MULTILABEL: "labels", Problem.REGRESSION: "score"}.get(problem, "label")


def _right(mode: str, gold: Any, prediction: Any) -> bool:
    if mode == "labels":
        return set(gold) == set(prediction)
    if mode == "score":
        return abs(float(prediction) - float(gold)) <= SCORE_TOLERANCE
    return str(prediction) == str(gold)


def _with_predictions(records: Sequence[RunRecord], results_root: Path) -> list[tuple[RunRecord, Path]]:
    found = [(r, r.predictions_file(results_root)) for r in records if r.ok]
    return [(r, p) for r, p in found if p is not None and p.is_file()]


@dataclass(frozen=True)
class _TestSet:
    """A test split as the pages of its dataset need it: the gold, each example's words (NER) or texts, and
    for NER each example's gold spans (the same for every seed and every configuration of the dataset)."""

    gold: blurb_predictions.Gold
    texts: list[list[str]]
    gold_spans: list[list[tuple[int, int, str]]] | None


# The splits a run's test predictions cover: the test split, or all three pooled for a cross-validated run (each
# fold's test examples come from the pooled splits, medibio.training.features.cv_splits)
TEST_SPLITS = ("test",)
CV_SPLITS = ("train", "dev", "test")


@functools.cache
def _test_set(dataset: str, data_root: str | None, splits: tuple[str, ...] = TEST_SPLITS) -> _TestSet:
    """The gold of ``dataset``'s ``splits``, read once for all its pages (a dataset has pages for its
    fine-tuning, IFT and frozen configurations)."""
    columns: dict[str, list[Any]] = {}
    for split in splits:  # whole columns: row access is slow
        for name, values in loaders.load_split(dataset, split, data_root).to_dict().items():
            columns.setdefault(name, []).extend(values)
    gold = blurb_predictions.gold_from_columns(dataset, "+".join(splits), columns)
    if _mode(dataset) == "ner":
        return _TestSet(gold, columns["tokens"], spans.sentence_spans(gold.references))
    texts = [[t, p] if p else [t] for t, p in zip(columns["text"], columns["text_pair"], strict=True)]
    return _TestSet(gold, texts, None)


@functools.lru_cache(maxsize=1 << 16)
def _ner_sentence(dataset: str, data_root: str | None, splits: tuple[str, ...], position: int,
                  predicted: tuple[tuple[int, int, str], ...]) -> tuple[list[list[Any]], bool, tuple[int, ...]]:
    """One NER test sentence's predicted spans against its gold spans: the spans with their error kinds (as
    the page lists them), whether all are right, and the counts of :data:`spans.KINDS`. Worked out once per
    distinct prediction: a dataset's pages read each sentence for every seed of every configuration, and most
    predictions recur (half have no entity)."""
    classified = spans.classify(_test_set(dataset, data_root, splits).gold_spans[position], predicted)
    tally = spans.counts(classified)
    return ([s.as_list() for s in classified], all(s.kind == "correct" for s in classified),
            tuple(tally[k] for k in spans.KINDS))


@functools.lru_cache(maxsize=32)
def _constant(dataset: str, data_root: str | None) -> tuple[Any, float] | None:
    """The constant answer of a dataset and its test score (None without the data to compute them)."""
    try:
        return constant.constant_answer(dataset, data_root), constant.majority_score(dataset, data_root)
    except (MedibioError, OSError):
        return None


def blurb_examples(records: Sequence[RunRecord], results_root: str | Path,
                   data_root: str | Path | None) -> Examples | None:
    """The test examples of BLURB runs, with each seed's prediction and whether it is right (None without
    predictions). Predictions are read and aligned with the gold as ``medibio blurb score`` reads them, on
    the test ids they cover (all of them but in limited and smoke runs, whose test sets are capped)."""
    found = _with_predictions(records, Path(results_root))
    if not found:
        return None
    dataset = found[0][0].dataset
    mode = _mode(dataset)
    data_key = None if data_root is None else str(data_root)
    splits = CV_SPLITS if found[0][0].details.get("cv_fold") else TEST_SPLITS
    test_set = _test_set(dataset, data_key, splits)
    gold, texts = test_set.gold, test_set.texts
    read = [(record, path, blurb_predictions.read_predictions(path, dataset)) for record, path in found]
    position = {i: k for k, i in enumerate(gold.ids)}
    listed = set().union(*(preds.keys() for _, _, preds in read))
    rows = {i: {"id": i, "i": position[i], "ok": {}} for i in gold.ids if i in listed}
    counts: dict[int, dict[str, int]] = {}
    for record, path, preds in read:
        seed = str(record.seed)
        covered = [i for i in gold.ids if i in preds]
        sub = blurb_predictions.Gold(dataset, gold.split, covered, [gold.references[position[i]] for i in covered])
        aligned = blurb_predictions.align(path, preds, sub)
        if mode == "ner":
            found_spans = spans.sentence_spans(aligned)
            tallies = []
            for sid, predicted in zip(covered, found_spans, strict=True):
                row = rows[sid]
                marked, row["ok"][seed], tally = _ner_sentence(dataset, data_key, splits, position[sid],
                                                               tuple(predicted))
                row.setdefault("s", {})[seed] = marked
                tallies.append(tally)
            summed = [sum(column) for column in zip(*tallies, strict=True)] or [0] * len(spans.KINDS)
            counts[record.seed] = dict(zip(spans.KINDS, summed, strict=True))
            continue
        for sid, ref, pred in zip(covered, sub.references, aligned, strict=True):
            row = rows[sid]
            row["g"] = ref
            row.setdefault("p", {})[seed] = pred
            row["ok"][seed] = _right(mode, ref, pred)
    return Examples(mode, [r.seed for r, _ in found], list(rows.values()), counts, texts,
                    f"{RUNS_DIR}/texts/{dataset}-{'+'.join(splits)}.js")


def scierc_examples(records: Sequence[RunRecord], results_root: str | Path,
                    data_root: str | Path | None) -> Examples | None:
    """The SciERC test documents with each seed's entities, relations and clusters classified by error kind."""
    found = _with_predictions(records, Path(results_root))
    if not found:
        return None
    gold = scierc_data.load_split("test", data_root)
    out = {d.doc_key: {"id": d.doc_key, "t": d.words(), "ok": {},
                       "gc": [[list(m) for m in c] for c in d.clusters]} for d in gold}
    counts: dict[int, dict[str, int]] = {}
    for record, path in found:
        seed = str(record.seed)
        docs, predicted = scierc_predictions.read(path, gold, partial=True)
        total = {**{f"entity {k}": 0 for k in spans.KINDS}, **{f"relation {k}": 0 for k in spans.KINDS},
                 **{f"coreference {k}": 0 for k in spans.COREF_KINDS}}
        for doc, pred in zip(docs, predicted, strict=True):
            row = out[doc.doc_key]
            entities = spans.classify(doc.all_entities(), pred["entities"])
            relations = spans.classify_relations(doc.all_relations(), pred["relations"])
            coref = spans.coreference_errors(doc.clusters, pred["clusters"])
            row.setdefault("s", {})[seed] = [s.as_list() for s in entities]
            row.setdefault("r", {})[seed] = [[*e.relation, e.side, e.kind] for e in relations]
            row.setdefault("c", {})[seed] = coref  # tuples become JSON lists
            row.setdefault("pc", {})[seed] = pred["clusters"]
            row["ok"][seed] = (all(s.kind == "correct" for s in entities)
                               and all(e.kind == "correct" for e in relations)
                               and not any(coref.values()))
            for kind, n in spans.counts(entities).items():
                total[f"entity {kind}"] += n
            for kind, n in spans.relation_counts(relations).items():
                total[f"relation {kind}"] += n
            for kind, found_ in coref.items():
                total[f"coreference {kind}"] += len(found_)
        counts[record.seed] = total
    rows = [row for row in out.values() if row["ok"]]
    return Examples("scierc", [r.seed for r, _ in found], rows, counts)


def examples_of(config: Configuration, results_root: str | Path, data_root: str | Path | None) -> Examples | None:
    """The examples a run page lists: BLURB and SciERC runs with test predictions and gold at hand."""
    dataset = config.first.dataset
    try:
        if dataset == scierc_data.SPEC.name:
            return scierc_examples(config.records, results_root, data_root)
        if registry.is_blurb(dataset):
            return blurb_examples(config.records, results_root, data_root)
    except (MedibioError, OSError) as exc:  # no data root here: the page says why instead of the list
        raise PageDataError(f"{config.title}: {exc}") from exc
    return None


class PageDataError(MedibioError):
    """The gold or the predictions of a run page could not be read (the page says so)."""


@dataclass(frozen=True)
class _PageParts:
    """What one run page needs of its runs' predictions, made where they are read (a worker process): the
    examples list, hundreds of MB for the whole book, is written there and never sent back."""

    problem: str  # why the page lists no examples (the gold or the predictions could not be read)
    curve: str  # the dev curve, an SVG
    counts: str  # the error kinds per seed, an HTML table
    examples: str  # the examples' JSON, inline in the page, or "" where they lie in ``examples_file``
    examples_file: str
    texts_file: str  # the script with the texts the examples' rows name by position, under the HTML root
    paired: Examples | None  # the examples themselves, for a configuration with a paired view
    downloads: dict[int, list[dict[str, str]]]  # seed -> its record and predictions, copied beside the page
    constant: tuple[Any, float] | None  # the dataset's constant answer and its test score (BLURB pages)


def _page_parts(config: Configuration, results_root: Path, data_root: str | Path | None, html_dir: Path,
                paired: bool) -> _PageParts:
    folder = (html_dir / config.url).parent
    try:
        found, problem = examples_of(config, results_root, data_root), ""
    except PageDataError as exc:
        found, problem = None, str(exc)
    texts_file = found.texts_url if found else ""
    if texts_file and not (html_dir / texts_file).is_file():  # the first page of its dataset writes it
        write_text(html_dir / texts_file, f"window.medibioTexts = {_json_script(found.texts)};\n")
    payload = _json_script(found.payload()) if found else ""
    examples_file = ""
    if len(payload) > INLINE_EXAMPLES:
        examples_file = write_text(folder / "examples.js", f"window.medibioExamples = {payload};\n").name
        payload = ""
    dataset = config.first.dataset
    constant_answer = _constant(dataset, None if data_root is None else str(data_root)) \
        if registry.is_blurb(dataset) else None
    return _PageParts(problem, dev_curve_svg(config.records), _frame_html(error_counts(found) if found else None),
                      payload, examples_file, texts_file, found if paired else None,
                      _downloads(config, results_root, folder),
                      constant_answer)


def _dataset_parts(configs: Sequence[tuple[Configuration, bool]], results_root: Path, data_root: str | Path | None,
                   html_dir: Path) -> list[_PageParts]:
    """:func:`_page_parts` of one dataset's configurations (each with whether it has a paired view), in one
    process: the dataset's test set is read and its sentences' predicted spans are worked out there once."""
    with workers.no_collections():
        return [_page_parts(c, results_root, data_root, html_dir, paired) for c, paired in configs]


def error_counts(examples: Examples) -> pd.DataFrame | None:
    """Error kinds (rows) per seed (columns) of a span task; None for other tasks."""
    if not examples.counts:
        return None
    frame = pd.DataFrame({f"seed {s}": c for s, c in sorted(examples.counts.items())})
    frame.index.name = "error kind"
    return frame


# --------------------------------------------------------------------------- paired view


def paired_rows(a: Examples, b: Examples) -> tuple[dict[str, int], list[dict[str, Any]]]:
    """Each example right or wrong for system A and for B (by the majority of each system's seeds: right on
    more than half of them); the 2x2 counts and the examples on which the two disagree."""
    def majority(ex: Examples) -> dict[str, bool]:
        return {row["id"]: sum(row["ok"].values()) * 2 > len(row["ok"]) for row in ex.rows}

    right_a, right_b = majority(a), majority(b)
    if set(right_a) != set(right_b):
        raise ValueError("a paired view needs the same test examples on both sides")
    rows_b = {row["id"]: row for row in b.rows}
    table = {"both right": 0, "only A right": 0, "only B right": 0, "both wrong": 0}
    differ = []
    for row in a.rows:
        ra, rb = right_a[row["id"]], right_b[row["id"]]
        which = "both right" if ra and rb else "only A right" if ra else "only B right" if rb else "both wrong"
        table[which] += 1
        if ra != rb:
            text = row["t"] if "t" in row else a.texts[row["i"]]
            differ.append({"id": row["id"], "which": which, "t": text, "a": row, "b": rows_b[row["id"]]})
    return table, differ


def _direct_variant(variant: str) -> str:
    """The direct fine-tuning variant an IFT variant is compared with: ``base``, or the same fold's ``cvN``."""
    return fold_of(variant)[1] or BASE_VARIANT


def ift_pairs(configs: Sequence[Configuration]) -> list[tuple[Configuration, Configuration]]:
    """(after an intermediate task, direct) pairs of fine-tuning configurations on the same profile, model,
    dataset and cross-validation fold: the comparison the book's IFT tables test."""
    direct = {(c.first.profile, c.first.model_tag, c.first.dataset, c.first.variant): c for c in configs
              if c.first.kind == "finetune" and not variants.is_ift(c.first.variant)}
    pairs = []
    for c in configs:
        key = (c.first.profile, c.first.model_tag, c.first.dataset, _direct_variant(c.first.variant))
        if c.first.kind == "finetune" and variants.is_ift(c.first.variant) and key in direct:
            pairs.append((c, direct[key]))
    return pairs


# --------------------------------------------------------------------------- links from tables


def cell_links(rows: Mapping[Any, Iterable[RunRecord]], columns: Sequence[str]) -> dict[tuple[str, str], str]:
    """(row label, column) -> run page of the row's records (their newest configuration, as the tables
    aggregate them), for each of ``columns``; rows without a scored record get no link."""
    out = {}
    for row, records in rows.items():
        found = _newest(records)
        if found is not None:
            out.update({(label_text(row), str(c)): run_page_url(found) for c in columns})
    return out


def frozen_records(results_root: str | Path, records: Iterable[RunRecord]) -> dict[tuple[str, str, str], list[RunRecord]]:
    """(profile, model tag, dataset) -> the frozen-encoder records of that encoder on that dataset."""
    out: dict[tuple[str, str, str], list[RunRecord]] = {}
    for profile, tag, dataset in {(r.profile, r.model_tag, r.dataset) for r in records}:
        found = load_records(results_root, profile=profile, model=tag, dataset=dataset, kind="frozen", legacy=False)
        if found:
            out[(profile, tag, dataset)] = found
    return out


def _newest(records: Iterable[RunRecord]) -> RunRecord | None:
    kept, _ = newest_configurations([r for r in records if r.ok and not r.legacy])
    return kept[0] if kept else None


def _frozen_links(groups: Mapping[Any, Sequence[RunRecord]], results_root: str | Path | None,
                  frozen_columns: Sequence[str]) -> dict[tuple[str, str], str]:
    if results_root is None:
        return {}
    frozen = frozen_records(results_root, [r for recs in groups.values() for r in recs])
    out = {}
    for row, recs in groups.items():
        found = frozen.get((recs[0].profile, recs[0].model_tag, recs[0].dataset)) if recs else None
        if found:
            out.update(cell_links({row: found}, frozen_columns))
    return out


def table_links(records: Iterable[RunRecord], columns: Sequence[str], *, index: Sequence[str] = ("dataset",),
                results_root: str | Path | None = None,
                frozen_columns: Sequence[str] = FROZEN_COLUMNS) -> dict[tuple[str, str], str]:
    """Links for a results table with one row per record group: rows keyed by the records' attributes named
    in ``index`` (``dataset``, ``model_tag``, ``variant``), ``columns`` to the row's run page and, given the
    results root, ``frozen_columns`` to the frozen-encoder page of the same encoder and dataset."""
    groups: dict[Any, list[RunRecord]] = {}
    for r in records:
        key = tuple(getattr(r, name) for name in index)
        groups.setdefault(key[0] if len(key) == 1 else key, []).append(r)
    return {**cell_links(groups, columns), **_frozen_links(groups, results_root, frozen_columns)}


def ift_links(runs: Mapping[str, Sequence[RunRecord]], results_root: str | Path | None = None,
              columns: Sequence[str] = ("mean", "std", "95% CI (test)", "dev mean"),
              gain_columns: Sequence[str] = ("gain over baseline", "95% CI of the gain", "p"),
              baseline: str = "none (baseline)",
              frozen_columns: Sequence[str] = FROZEN_COLUMNS) -> dict[tuple[str, str], str]:
    """Links for an IFT table (:func:`medibio.results.ift.ift_table`: one row per intermediate task):
    ``columns`` to the row's run page, ``gain_columns`` to the paired view of the row against the
    ``baseline`` row, ``frozen_columns`` to the frozen-encoder page."""
    links = {**cell_links(runs, columns), **_frozen_links(runs, results_root, frozen_columns)}
    direct = _newest(runs.get(baseline, []))
    for label, records in runs.items():
        found = _newest(records)
        if label != baseline and found is not None and direct is not None:
            links.update({(label_text(label), c): paired_page_url(found, direct) for c in gain_columns})
    return links


def matrix_links(matrix_runs: Mapping[str, Mapping[str, Sequence[RunRecord]]], columns: Sequence[str] | None = None,
                 results_root: str | Path | None = None) -> dict[tuple[str, str], str]:
    """Links for a transfer matrix: with ``columns``, a table with one row per (target, intermediate) (each
    of ``columns`` to that cell's runs, as :func:`ift_links`); without, the matrix itself (targets as rows,
    intermediate tasks as columns: each cell to its runs)."""
    if columns is None:
        return {(label_text(target), label): run_page_url(found) for target, runs in matrix_runs.items()
                for label, records in runs.items() if (found := _newest(records)) is not None}
    out = {}
    for target, runs in matrix_runs.items():
        for (label, column), url in ift_links(runs, results_root, columns).items():
            out[(label_text((target, label)), column)] = url
    return out


def scierc_links(records: Sequence[RunRecord], tasks: Sequence[str], columns: Sequence[str]) -> dict[tuple[str, str], str]:
    """Links for a SciERC table with one row per (model, task): each of ``columns`` to the model's runs."""
    by_model: dict[str, list[RunRecord]] = {}
    for r in records:
        by_model.setdefault(r.model_tag, []).append(r)
    return cell_links({(model, task): recs for model, recs in by_model.items() for task in tasks}, columns)


def paper_numbers(record: RunRecord) -> list[dict[str, str]]:
    """The paper's scores for what a run page shows: a study arm's Table 6 column, else Table 6's #1 (the
    configuration that became MediBioDeBERTa) and Table 7's MediBioDeBERTa-IFT, on the run's BLURB dataset."""
    if not registry.is_blurb(record.dataset):
        return []
    arm = STUDY.arm_of(record.variant)
    model_arm = STUDY.arm_of((zoo.split_pretrained_tag(record.model_tag) or (record.model_tag,))[0])
    if arm is not None:
        columns = [(6, arm.configuration)] if arm.configuration is not None else []
    elif model_arm is not None:
        # a study model fine-tuned in another design (the cpu-ift runs of #3): directly, the paper's Table 6
        # column of its arm; after an intermediate task, none (the paper made IFT runs of #1 alone)
        direct = not variants.is_ift(record.variant) and model_arm.configuration is not None
        columns = [(6, model_arm.configuration)] if direct else []
    else:
        columns = [(6, "#1"), (7, "MediBioDeBERTa-IFT")]
    out = []
    for table, column in columns:
        score = paper_tables.column_scores(table, column).get(record.dataset)
        if score is not None:
            out.append({"what": f"Table {table}, {column}", "score": _number(float(score))})
    return out


# --------------------------------------------------------------------------- rendering


def _environment() -> Any:
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["paths"] = shown_paths
    return env


_ABSOLUTE = re.compile(r"(?<![\w.~:/-])(?:/[\w.+@-]+){2,}/?")


def shown_paths(text: str) -> str:
    """A record's text (its notes, its configuration) or a page's problem, with the folders of the machine that
    made it shortened to what a reader can place: a run's folder from its kind on
    (``ift-stage/cpu-ift/minilm/STS-B/…``, as under any results root), any other path by its last two parts
    (``…/study/tokenizer-study``). The downloads keep the record as it was written."""
    def shorter(found: re.Match[str]) -> str:
        parts = found.group(0).strip("/").split("/")
        kind = next((i for i, part in enumerate(parts) if part in KINDS), None)
        return "/".join(parts[kind:]) if kind is not None else "…/" + "/".join(parts[-2:])

    return _ABSOLUTE.sub(shorter, text)


_CURVE_INCHES = (4.2, 2.4)
# the axes' place in the figure, fixed (room for the tick labels and the axis titles): a tight bounding box
# would draw every curve twice to measure it, and the curve was a third of a run page's time
_CURVE_MARGINS = {"left": 0.8 / 4.2, "right": 1 - 0.12 / 4.2, "bottom": 0.58 / 2.4, "top": 1 - 0.1 / 2.4}


def dev_curve_svg(records: Sequence[RunRecord]) -> str:
    """The dev score per epoch of each seed, as a small inline SVG (text kept as text). Drawn on a bare
    :class:`~matplotlib.figure.Figure` (no pyplot state to create and close a few hundred times)."""
    import matplotlib
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    curves = [(r.seed, [(e["epoch"], e["dev"].get("score")) for e in r.dev_curve if "dev" in e])
              for r in records if r.dev_curve]
    curves = [(seed, [(x, y) for x, y in points if y is not None]) for seed, points in curves]
    if not any(points for _, points in curves):
        return ""
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "medibio"}):
        fig = Figure(figsize=_CURVE_INCHES)
        fig.subplots_adjust(**_CURVE_MARGINS)
        ax = fig.add_subplot()
        # epochs are whole numbers; a few ticks suit a figure this small, and each tick costs (a quarter of the time)
        ax.xaxis.set_major_locator(MaxNLocator(nbins=5, integer=True))
        ax.yaxis.set_major_locator(MaxNLocator(nbins=4))
        for seed, points in curves:
            ax.plot([x for x, _ in points], [y for _, y in points], marker="o", label=f"seed {seed}")
        ax.set_xlabel("epoch")
        ax.set_ylabel("dev score")
        ax.grid(alpha=0.3)
        if len(curves) > 1:
            ax.legend(fontsize=8)
        buffer = io.StringIO()
        fig.savefig(buffer, format="svg", metadata={"Date": None})
    text = buffer.getvalue()
    return text[text.index("<svg"):]


def _number(value: Any, digits: int = 2) -> str:
    """A score or measure with ``digits`` decimals, a count with thousands separators (one format per page)."""
    if value is None or (isinstance(value, float) and value != value):
        return "–"
    if isinstance(value, bool):
        return yes_no(value)
    if isinstance(value, Integral):  # numpy's integers too (a count table's cells)
        return f"{int(value):,}"
    return f"{value:,.{digits}f}" if isinstance(value, float) else str(value)


def setting_text(value: Any) -> str:
    """A hyperparameter as the configuration table shows it: flags as yes/no, no value as "none", text without
    JSON's quotes; numbers, lists and mappings as JSON (a learning rate keeps its digits)."""
    if isinstance(value, bool):
        return yes_no(value)
    if value is None:
        return "none"
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _seed_rows(records: Sequence[RunRecord], files: Mapping[int, list[dict[str, str]]]) -> list[dict[str, Any]]:
    return [{"seed": r.seed, "status": r.status if r.ok else f"skipped: {r.reason}",
             "best_epoch": _number(r.best_epoch), "dev": _number(r.score_dev), "test": _number(r.score_test),
             "wall": _number(r.wall_time_s, 1), "speed": _number(r.train_examples_per_s, 1),
             "memory": _number(r.peak_memory_mb, 0), "train": _number(r.train_examples),
             "eval": _number(r.eval_examples), "threads": _number(r.cpu_threads), "created": r.created,
             "files": files.get(r.seed, [])} for r in records]


def _download(data: bytes, dest: Path) -> dict[str, str]:
    """Write a record or predictions file next to its page (atomically; gzipped predictions uncompressed, so that
    the download is the file its record's digest names) and describe the download."""
    with atomic_open(dest, "wb") as out:
        out.write(data)
    return {"name": dest.name, "sha256": hashlib.sha256(data).hexdigest(), "bytes": f"{len(data):,}"}


def _downloads(config: Configuration, results_root: Path, folder: Path) -> dict[int, list[dict[str, str]]]:
    out: dict[int, list[dict[str, str]]] = {}
    for r in config.records:
        record = r.path(results_root)
        files = [_download(file_bytes(record), folder / record.name)]
        pred = r.predictions_location(results_root)
        if pred is not None:  # read once: checked against the record and written from the same bytes
            files.append(_download(checked_content(r, pred), folder / r.predictions))
        out[r.seed] = files
    return out


def _relative(url: str, page: str) -> str:
    """``url`` (relative to the HTML root) as seen from the page at ``page``."""
    depth = page.count("/")
    return "../" * depth + url


def frozen_of(config: Configuration, frozen: Mapping[tuple[str, str], list[Configuration]]) -> list[Configuration]:
    """The frozen-encoder configurations of the same encoder (by its fingerprint) on the same dataset, those of the
    page's own profile first. A frozen probe reads the encoder's weights and the dataset alone, so a run filed
    under another profile (a cpu-ift run of MiniLM) has the baseline the profile that probed it recorded."""
    r = config.first
    found = frozen.get(((r.model or {}).get("hash", ""), r.dataset), [])
    return sorted(found, key=lambda c: (c.first.profile != r.profile, c.first.profile, c.first.variant))


def _baselines(config: Configuration, frozen: Mapping[tuple[str, str], list[Configuration]],
               constant_answer: tuple[Any, float] | None) -> list[dict[str, str]]:
    r = config.first
    if config.first.kind == "frozen" or not registry.is_blurb(r.dataset):
        return []
    # a cross-validation fold is tested on its own examples of the pooled splits: the baselines are the test split's
    where = ", on the test split, not this fold's examples" if r.details.get("cv_fold") else ""
    found = frozen_of(config, frozen)
    out = [{"what": f"frozen encoder ({c.first.variant}{'' if c.first.profile == r.profile else ', ' + c.first.profile}"
                    f"{where})", "short": "frozen encoder", "score": _number(c.test_mean),
            "interval": (f"[{_number(c.first.test.get('ci95_low'))}, {_number(c.first.test.get('ci95_high'))}]"
                         if "ci95_low" in c.first.test else ""),
            "url": _relative(c.url, config.url)} for c in found]
    if not found:
        out.append({"what": "frozen encoder: no probe of this model on this dataset is recorded", "short": "",
                    "score": "–", "interval": "", "url": ""})
    if constant_answer is not None:
        answer, score = constant_answer
        undefined = registry.get(r.dataset).metric in UNDEFINED_FOR_CONSTANT
        out.append({"what": f"constant answer ({json.dumps(answer)[:40]}, from the training split{where})",
                    "short": "constant answer",
                    "score": "undefined (no correlation with a constant)" if undefined else _number(score),
                    "interval": "", "url": ""})
    return out


def _frame_html(frame: pd.DataFrame | None) -> str:
    """A count table as the page's other counts read (thousands separators)."""
    if frame is None:
        return ""
    return frame.to_html(classes="numbers", border=0, na_rep="–", formatters={c: _number for c in frame.columns})


def _download_list(downloads: Mapping[int, list[dict[str, str]]]) -> list[dict[str, Any]]:
    """The downloads section's rows, one per seed: its files, each with its size and SHA-256 (out of the score
    table: a digest is provenance, not a score)."""
    return [{"seed": seed, "files": files} for seed, files in sorted(downloads.items())]


def _json_script(payload: Any) -> str:
    """JSON safe inside ``<script type="application/json">`` (no ``</`` can close the element). orjson writes what
    ``json.dumps(ensure_ascii=False, separators=(",", ":"))`` writes, six times as fast: the examples' JSON,
    megabytes a page, was a sixth of the run pages' time."""
    return orjson.dumps(payload).decode().replace("</", "<\\/")


def write_run_pages(results_root: str | Path, profile: str, html_dir: str | Path,
                    data_root: str | Path | None = None) -> list[Path]:
    """Write a page per configuration of ``profile`` under ``html_dir/runs/``, the paired IFT views and an
    index; return the pages written. The runs/ folder is rebuilt from scratch (a removed record leaves no
    page behind)."""
    with workers.no_collections():
        return _write_run_pages(Path(results_root), profile, Path(html_dir), data_root)


def _write_run_pages(results_root: Path, profile: str, html_dir: Path, data_root: str | Path | None) -> list[Path]:
    out_root = html_dir / RUNS_DIR
    if out_root.exists():
        shutil.rmtree(out_root)
    env = _environment()
    for name in ASSETS:
        write_text(out_root / name, (TEMPLATES / name).read_text(encoding="utf-8"))
    configs = [c for name in (profile, *READ_BESIDE.get(profile, ())) for c in configurations(results_root, name)]
    frozen: dict[tuple[str, str], list[Configuration]] = {}
    for c in configs:
        if c.first.kind == "frozen":
            frozen.setdefault(((c.first.model or {}).get("hash", ""), c.first.dataset), []).append(c)
    pairs = ift_pairs(configs)
    in_pairs = {id(c) for pair in pairs for c in pair}
    # each page's examples, counts and curve, the pages' bulk: a dataset a call, on every core
    by_dataset: dict[str, list[Configuration]] = {}
    for c in configs:
        by_dataset.setdefault(c.first.dataset, []).append(c)
    groups = list(by_dataset.values())
    made = workers.side_by_side(
        _dataset_parts, [([(c, id(c) in in_pairs) for c in group], results_root, data_root, html_dir)
                         for group in groups],
        [sum((c.first.eval_examples or 0) * len(c.records) for c in group) for group in groups])
    parts = {id(c): part for group, found in zip(groups, made, strict=True)
             for c, part in zip(group, found, strict=True)}
    # a paired view needs both lists of examples; a run page links to one only where it is written
    pairs = [(a, b) for a, b in pairs if parts[id(a)].paired is not None and parts[id(b)].paired is not None]
    paired_of = {id(a): b for a, b in pairs}
    written = []
    for config in configs:
        folder = (html_dir / config.url).parent
        part, other = parts[id(config)], paired_of.get(id(config))
        html = env.get_template("run.html").render(
            config=config, record=config.first, root=_relative("", config.url),
            seeds=_seed_rows(config.records, part.downloads),
            hyperparameters=[(k, setting_text(v)) for k, v in sorted(config.first.hyperparameters.items())],
            curve=part.curve, baselines=_baselines(config, frozen, part.constant), counts=part.counts,
            metric=metric_name(config.first.dataset), downloads=_download_list(part.downloads),
            examples=part.examples, examples_file=part.examples_file, texts_file=part.texts_file,
            problem=part.problem,
            paper=paper_numbers(config.first),
            paired=_relative(paired_page_url(config.first, other.first), config.url) if other else "",
            json=lambda value: json.dumps(value, indent=1, ensure_ascii=False, default=str))
        written.append(write_text(folder / "index.html", html))
    paired_pages = []
    for a, b in pairs:
        ea, eb = parts[id(a)].paired, parts[id(b)].paired
        url = paired_page_url(a.first, b.first)
        table, differ = paired_rows(ea, eb)
        fold = bool(a.first.details.get("cv_fold"))  # its examples are not the test split's
        test = None if fold else compare_records(a.records, b.records, results_root, a.first.dataset,
                                                 label_a=a.first.variant, label_b=b.first.variant,
                                                 data_root=data_root)
        html = env.get_template("paired.html").render(
            a=a, b=b, root=_relative("", url), mode=ea.mode, table=table, differ=differ, test=test, fold=fold,
            a_url=_relative(a.url, url), b_url=_relative(b.url, url), number=_number,
            tolerance=SCORE_TOLERANCE)
        written.append(write_text(html_dir / url, html))
        paired_pages.append({"url": url, "a": a, "b": b, "differ": len(differ)})
    index = env.get_template("index.html").render(profile=profile, beside=READ_BESIDE.get(profile, ()),
                                                  configs=configs, number=_number,
                                                  paired=paired_pages, root="../",
                                                  local=lambda url: url.removeprefix(RUNS_DIR + "/"))
    written.append(write_text(out_root / "index.html", index))
    return written


def arms_table(records: Iterable[RunRecord]) -> tuple[pd.DataFrame, dict[tuple[str, str], str]]:
    """The configurations behind a design's claims, one row per (model, dataset, arm): the mean test score over
    the seeds of the test split's configuration and of each cross-validation fold's, each a link to its run page
    (the links of :meth:`medibio.book.notebook.ChapterContext.table`). A design's claims are judged on these
    runs; the table is how a reader reaches them."""
    groups: dict[tuple[str, str, str, str], list[RunRecord]] = {}
    for r in records:
        if r.kind != "finetune":
            continue
        arm, fold = fold_of(r.variant)
        groups.setdefault((r.model_tag, r.dataset, arm, fold), []).append(r)
    rows: dict[tuple[str, str, str], dict[str, Any]] = {}
    links: dict[tuple[str, str], str] = {}
    for (model, dataset, arm, fold), found in sorted(groups.items()):
        newest = [r for r in newest_configurations([r for r in found if r.ok and not r.legacy])[0]
                  if r.score_test is not None]
        if not newest:
            continue
        column = f"fold {fold.removeprefix('cv')}" if fold else "test split"
        row = rows.setdefault((model, dataset, arm), {})
        row[column] = round(statistics.fmean(float(r.score_test) for r in newest), 2)
        if not fold:
            row["seeds"] = len(newest)
        links[(label_text((model, dataset, arm)), column)] = run_page_url(newest[0])
    frame = pd.DataFrame.from_dict(rows, orient="index")
    if frame.empty:
        return frame, {}
    frame.index = pd.MultiIndex.from_tuples(frame.index, names=["model", "dataset", "arm"])
    folds = sorted((c for c in frame.columns if c.startswith("fold ")), key=lambda c: int(c.split()[1]))
    return frame.reindex(columns=[c for c in ("test split", "seeds", *folds) if c in frame.columns]), links


def runs_index_link(text: str = "every run of this book", profile: str = "") -> str:
    """An HTML link from a chapter page (one folder down from the HTML root) to the runs index, or to one
    profile's part of it: the index is written after jupyter-book, outside the table of contents."""
    anchor = f"#profile-{profile}" if profile else ""
    return f'<a class="runs-index" href="../{RUNS_DIR}/index.html{anchor}">{text}</a>'
