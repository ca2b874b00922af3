"""Each claim's evidence: what the paper prints for it (:func:`paper_evidence`) and what our runs say
(:func:`our_evidence`).

Our difference is always "A − B" as the claim names them, from run records: one multi-bootstrap per claim
(:func:`medibio.results.significance.multi_bootstrap`: test units, fine-tuning and pretraining seeds resampled)
whose interval and p-value are read from the same draws; a bootstrap over papers for the field claim
(:func:`medibio.fields.bootstrap.field_margin`). The runs of a Table 5 claim are where its experiment says
(:func:`medibio.experiments.table5.places`); those of an IFT claim are its declared profile's and models'.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from medibio.book.claims import (
    FIELD_METADATA,
    GENERAL_DOMAIN,
    MEDICINE_NEIGHBOURS,
    STUDY_ANCHOR,
    T5_SETS,
    Claim,
)
from medibio.book.rules import WELCH_RUNS, paper_verdict, welch_sd
from medibio.core import precision, profiles
from medibio.core.errors import DataMissingError, MedibioError
from medibio.core.settings import Settings
from medibio.experiments import table5
from medibio.fields.bootstrap import field_margin
from medibio.finetune.variants import variant_name
from medibio.ift import variants
from medibio.models.zoo import model_tag
from medibio.paper import audit, sources
from medibio.paper import claims as printed_claims
from medibio.pretrain.lineage import continued_from
from medibio.results.aggregate import newest_configurations
from medibio.results.recorded import REFERENCE_ROOT
from medibio.results.significance import (
    VERDICT_RESAMPLES,
    MultiComparison,
    Runs,
    cv_runs,
    multi_bootstrap,
    runs_of,
    score_side_by_side,
)
from medibio.runs.records import BASE_VARIANT, RunRecord, load_records
from medibio.tasks import registry, student
from medibio.tasks.bootstrap import CONFIDENCE, bootstrap_interval
from medibio.tasks.units import unit_stats
from medibio.training.config import CV_FOLDS, FinetuneConfig

_T4_RUNS = audit.RUNS_TABLE4


_PER_SET = "set:"  # the label prefix of a Table 5 claim's per-set statistics


@dataclass(frozen=True)
class PaperEvidence:
    """What the paper prints for a claim: A, B, their difference, Welch's test, failed checks."""

    a: float | None
    b: float | None
    diff: float | None
    p: float | None
    test: str
    problems: tuple[str, ...]  # the failed checks, named
    verdict: str
    details: tuple[str, ...] = ()  # what each failed check found
    welch_sd: float | None = None  # means only: the seed sd below which Welch (5 + 5) calls diff significant
    quoted_diff: float | None = None  # the difference the text quotes, where that is another statistic than ours


def _failed_checks(claim: Claim, checks: pd.DataFrame, rechecked: pd.DataFrame) -> list[tuple[str, str]]:
    out = []
    for ref in claim.checks:
        if ref.startswith("sources:"):
            row = rechecked.loc[ref.split(":", 1)[1]]
            if row["changed"]:  # the published figures turn the comparison around
                out.append((f"cross-source audit: {row['context']}", str(row["detail"])))
            continue
        row = checks.loc[ref]
        if not row["consistent"]:
            out.append((f"Appendix A: {row['where']}", str(row["explanation"])))
    return out


def paper_evidence(claim: Claim, checks: pd.DataFrame | None = None,
                   rechecked: pd.DataFrame | None = None) -> PaperEvidence:
    """The paper's evidence for ``claim`` from its printed numbers (see :func:`paper_verdict`)."""
    checks = audit.run_audit().set_index("id") if checks is None else checks
    rechecked = sources.recheck_claims().set_index("id") if rechecked is None else rechecked
    failed = _failed_checks(claim, checks, rechecked)
    problems, details = tuple(name for name, _ in failed), tuple(what for _, what in failed)
    if claim.printed is None:
        return PaperEvidence(None, None, None, None, "", problems, paper_verdict(None, claim.side, problems, None),
                             details)
    a, b = (printed_claims.resolve(ref) for ref in claim.printed)
    quoted = [printed_claims.resolve(ref) for ref in claim.quoted] if claim.quoted else []
    also = (f" in our statistic ({printed_claims.ref_label(claim.printed[0])}, and B's); the text quotes "
            f"{quoted[0]:g} vs {quoted[1]:g} ({' vs '.join(map(printed_claims.ref_label, claim.quoted))}), another "
            "statistic" if claim.quoted else "")
    diff, p, sd = a - b, None, welch_sd(a - b)
    test = (f"{a:.2f} vs {b:.2f}{also}: means without spread, no test possible; Welch's test on {WELCH_RUNS} + "
            f"{WELCH_RUNS} runs would call {diff:+.2f} significant with a seed sd below {sd:.2f}")
    if claim.spread:
        sd_a, sd_b = (printed_claims.resolve(f"{ref} std") for ref in claim.printed)
        welch = student.welch_from_stats(a, sd_a, _T4_RUNS, b, sd_b, _T4_RUNS)
        p = float(welch.pvalue)
        test = (f"{a:.1f} ± {sd_a:.1f} vs {b:.1f} ± {sd_b:.1f}: Welch t = {welch.statistic:.2f}, p = {p:.3f} "
                f"({_T4_RUNS} runs each)")
        sd = None
    return PaperEvidence(a, b, diff, p, test, problems, paper_verdict(diff, claim.side, problems, p), details, sd,
                         quoted[0] - quoted[1] if quoted else None)


@dataclass(frozen=True)
class Beside:
    """A statistic shown beside the verdict's, read from other draws or other runs (never the verdict)."""

    label: str
    diff: float
    low: float
    high: float
    p: float
    runs: str


@dataclass(frozen=True)
class Evidence:
    """Our difference A − B in the declared statistic, its interval and p-value from one multi-bootstrap
    (:func:`medibio.results.significance.multi_bootstrap`), what was resampled and at which scale; or why
    there is none."""

    diff: float = math.nan
    low: float = math.nan
    high: float = math.nan
    p: float = math.nan
    runs: str = ""  # what was compared
    needs: str = ""  # what would test it, when nothing did
    resampled: str = ""  # what the draws resample
    resamples: int = 0
    scale: str = ""  # model and parameters, pretraining tokens, fine-tuning budget of our runs
    beside: tuple[Beside, ...] = ()
    anchor: str = ""  # the heading of the section that shows these runs, where it is not the claim's
    a_score: float = math.nan  # each arm's own score in the declared statistic
    b_score: float = math.nan
    constant: float = math.nan  # the constant answer's score on the same test units, and its interval
    constant_low: float = math.nan
    constant_high: float = math.nan
    draws: np.ndarray | None = dataclasses.field(default=None, repr=False, compare=False)  # the verdict's
    precisions: tuple[tuple[str, ...], ...] = ()  # each arm's fine-tuning precisions (empty: not known)
    profile: str = ""  # the profile whose runs were compared (a caption names it: not this build's model's)

    @property
    def tested(self) -> bool:
        return not math.isnan(self.low)


def claim_seed(claim_id: str) -> int:
    """The random seed of a claim's draws: fixed by its id, never by its data, so that a rebuild whose
    predictions moved draws the same resamples (common random numbers)."""
    return zlib.crc32(claim_id.encode())


def _from(found: MultiComparison, runs: str, scale: str, beside: tuple[Beside, ...],
          sides: Sequence[Sequence[Runs]], constant: tuple[float, float, float] | None = None,
          profile: str = "") -> Evidence:
    const = constant or (math.nan, math.nan, math.nan)
    return Evidence(found.diff, found.low, found.high, found.p_value, runs, "", found.resampled, found.resamples,
                    scale, beside, a_score=arm_score(sides[0]), b_score=arm_score(sides[1]), constant=const[0],
                    constant_low=const[1], constant_high=const[2], draws=found.draws, profile=profile)


def arm_score(side: Sequence[Runs]) -> float:
    """An arm's own score: the mean over datasets of the mean over its pretrained models of the mean over their
    fine-tuning seeds (the weighting of :func:`medibio.results.significance.multi_bootstrap`'s observed value)."""
    per_dataset = []
    for runs in side:
        scores = np.array(runs.scores)
        labels = np.array(runs.pretraining or [""] * len(scores))
        per_dataset.append(np.mean([scores[labels == g].mean() for g in sorted(set(labels))]))
    return float(np.mean(per_dataset))


def constant_interval(dataset: str, ids: frozenset[str], data_root: Path, resamples: int,
                      seed: int) -> tuple[float, float, float] | None:
    """The constant answer's score (:mod:`medibio.baselines.constant`: taken from the training split) on the test
    units ``ids``, and its interval over resampled units: what a model that learnt nothing scores. None where the
    data root lacks the split the answer is taken from."""
    from medibio.baselines.constant import constant_answer
    from medibio.tasks.predictions import load_gold

    try:
        answer = constant_answer(dataset, data_root)
    except DataMissingError:
        return None
    gold = load_gold(dataset, "test", data_root)
    kept = [(i, ref) for i, ref in zip(gold.ids, gold.references, strict=True) if i in ids]
    refs = [ref for _, ref in kept]
    answers = [[answer] * len(ref) for ref in refs] if registry.get(dataset).is_token_task else [answer] * len(refs)
    found = bootstrap_interval(unit_stats(dataset, refs, answers, [i for i, _ in kept]), resamples, seed)
    return found.score, found.low, found.high


def _beside(label: str, found: MultiComparison, runs: str) -> Beside:
    return Beside(label, found.diff, found.low, found.high, found.p_value, runs)


def _newest(records: Sequence[RunRecord]) -> dict[str, list[RunRecord]]:
    by_variant: dict[str, list[RunRecord]] = {}
    for rec in newest_configurations(records)[0]:
        if rec.ok and rec.predictions:
            by_variant.setdefault(rec.variant, []).append(rec)
    return by_variant


def _dev_mean(records: Sequence[RunRecord]) -> float:
    dev = [float(r.score_dev) for r in records if r.score_dev is not None]
    return float(np.mean(dev)) if dev else -math.inf


def _best(by_variant: dict[str, list[RunRecord]], intermediates: Sequence[str]) -> str | None:
    """The variant among ``ift-<task>`` for ``intermediates`` with the best mean dev score (never test)."""
    found = [variants.of_chain([t]) for t in intermediates if variants.of_chain([t]) in by_variant]
    return max(found, key=lambda v: _dev_mean(by_variant[v])) if found else None


def _describe(variant: str, records: Sequence[RunRecord]) -> str:
    """``base (3 seeds)``; runs made under ``--limit`` (judged only where the profile has no full runs of
    the variant) say so, since they are another experiment than the profile's."""
    limits = sorted({r.limited for r in records if r.limited is not None})
    limited = f", LIMITED to {'/'.join(map(str, limits))} examples per split" if limits else ""
    models = len({r.model_tag for r in records})
    if models > 1:  # runs of several pretrained models
        return f"{variant} ({len(records)} runs: {models} pretrained models × their seeds{limited})"
    return f"{variant} ({len(records)} seed{'s' if len(records) != 1 else ''}{limited})"


def _millions(n: float) -> str:
    return f"{n / 1e6:.1f}M"


def scale_of(records: Sequence[RunRecord], root: Path) -> str:
    """The scale of a set of runs from their records: the model with its parameters, its pretraining tokens
    (when a pretraining record of ours made it) and the fine-tuning budget, with the intermediate stage's."""
    if not records:
        return ""
    first = records[0]
    hp = first.hyperparameters or {}
    model = first.model or {}
    tokens = (first.details or {}).get("pretraining_tokens")
    models = len({(r.model or {}).get("hash") for r in records})
    if tokens is None:
        pretrained = "pretrained elsewhere (off the shelf)"
    elif tokens == 0:
        pretrained = "not pretrained (random init)"
    else:
        chain = continued_from((first.details or {}).get("pretraining_run", ""), root)
        origin, stages = chain or ("", ())
        seen = " + ".join(_millions(n) for n in (*stages, tokens))
        pretrained = (f"{origin} (pretrained elsewhere) continued on {seen} tokens here" if origin else
                      f"pretrained on {seen} tokens here" + ("" if chain else " (from what: its pretraining "
                                                              "record is not in this results folder)")) + (
            f", {models} pretraining seeds" if models > 1 else "")
    budget = (f"fine-tuned on {first.train_examples or '?'} training examples × {hp.get('effective_epochs', '?')} "
              f"epochs ({hp.get('optimizer_steps', '?')} steps), {len({r.seed for r in records})} seeds"
              + (" per pretrained model" if models > 1 else ""))
    chain = (first.details or {}).get("intermediate") or []
    if chain:
        stages = load_records(root, kind="ift-stage", profile=first.profile, variant=variants.chain_label(chain),
                              dataset=chain[-1])
        sizes = sorted({s.train_examples for s in stages if s.train_examples})
        size = "/".join(f"{n:,}" for n in sizes) or "?"
        budget += (f"; intermediate {variants.chain_label(chain)}: {size} examples × {hp.get('intermediate_epochs') or '?'} "
                   f"epoch, {'one stage per seed' if hp.get('intermediate_seed') is None else 'one stage for all'}")
    return (f"{model.get('tag', '?')} ({_millions(model.get('parameters') or 0)} parameters), {pretrained}; {budget}; "
            f"{_computed(records)}")


def _computed(records: Sequence[RunRecord]) -> str:
    """Where the runs computed: fine-tuning precision and CPU (or device), since two arms made on two machines
    differ by those as well as by their method."""
    def machine(env: dict[str, Any]) -> str:
        device = str(env.get("device", ""))
        return env.get("cpu") or (device if device and not device.startswith("cpu") else "a CPU its record does not name")

    where = sorted({(precision.label((r.hyperparameters or {}).get("mixed_precision_used")),
                     machine(r.environment or {})) for r in records})
    return "computed in " + " and ".join(f"{used} on {cpu}" for used, cpu in where)


def _compare(claim: Claim, by_variant: dict[str, list[RunRecord]], a: str, b: str, root: Path,
             settings: Settings, resamples: int,
             pretraining: Callable[[RunRecord], str] | None = None) -> tuple[MultiComparison, str, tuple[Runs, Runs]] | None:
    dataset = claim.test.dataset
    ra, rb = (runs_of(by_variant[v], root, v, dataset, settings.data_root, pretraining) for v in (a, b))
    if ra is None or rb is None:
        return None
    found = multi_bootstrap([(ra, rb)], {"primary": [ra.dataset]}, resamples, claim_seed(claim.id))["primary"]
    runs = f"{_describe(a, by_variant[a])} vs {_describe(b, by_variant[b])} on {dataset}, {found.units[0]} test units"
    return found, runs, (ra, rb)


def _cv_variant(arm: str, fold: int) -> str:
    """The variant name of ``arm``'s run on one cross-validation fold (``cv2``, ``ift-STS-B+cv2``), from the
    one place that names variants."""
    return variant_name(FinetuneConfig(cv_fold=fold), variants.chain_of(arm))


def _cross_validated(claim: Claim, by_variant: dict[str, list[RunRecord]], root: Path, settings: Settings,
                     resamples: int, pretraining: Callable[[RunRecord], str] | None = None) -> tuple[Beside, ...]:
    """The declared arms scored by cross-validation over every example of the dataset (each seed's folds
    pooled), a labelled row beside the declared statistic; none when either arm lacks complete seeds."""
    test = claim.test
    sides = [cv_runs([r for fold in range(1, CV_FOLDS + 1) for r in by_variant.get(_cv_variant(arm, fold), [])],
                     root, arm, test.dataset, settings.data_root, pretraining) for arm in (test.a, test.b)]
    if sides[0] is None or sides[1] is None:
        return ()
    found = multi_bootstrap([(sides[0], sides[1])], {"cv": [test.dataset]}, resamples, claim_seed(claim.id))["cv"]
    label = f"{CV_FOLDS}-fold cross-validation over all {len(sides[0].ids)} examples (secondary, not the verdict's)"
    return (_beside(label, found, f"{sides[0].system} vs {sides[1].system} on {test.dataset}"),)


def _dev_selected(claim: Claim, settings: Settings, profile: str, model: str, resamples: int) -> tuple[Beside, ...]:
    """The judged profile's intermediate picked by dev score (a labelled row beside the declared one)."""
    dataset = claim.test.dataset
    by_variant = _newest(load_records(settings.results_root, profile=profile, model=model, dataset=dataset))
    intermediates = [variants.chain_label(variants.chain_of(v)) for v in by_variant
                     if variants.is_ift(v) and "+cv" not in v]
    general = [t for t in intermediates if t in GENERAL_DOMAIN]
    if claim.test.kind == "ift-gain":
        a, b = _best(by_variant, intermediates), BASE_VARIANT if BASE_VARIANT in by_variant else None
    else:
        a, b = _best(by_variant, general), _best(by_variant, [t for t in intermediates if t not in general])
    found = _compare(claim, by_variant, a, b, settings.results_root, settings, resamples) if a and b else None
    if found is None:
        return ()
    label = f"dev-selected intermediate ({profile} profile: the best mean dev score, not declared)"
    return (_beside(label, found[0], f"{profile}/{model}: {found[1]}"),)


def _pretrained_model(record: RunRecord) -> str:
    """A run's pretrained model, the level above its fine-tuning seed where an arm has several."""
    return str((record.model or {}).get("hash", ""))


def _ift_runs(root: Path, profile: str, tags: Sequence[str], dataset: str) -> dict[str, list[RunRecord]]:
    """The newest runs of ``profile`` on ``dataset`` by variant, pooled over the models ``tags``."""
    by_variant: dict[str, list[RunRecord]] = {}
    for tag in tags:
        for variant, records in _newest(load_records(root, profile=profile, model=tag, dataset=dataset)).items():
            by_variant.setdefault(variant, []).extend(records)
    return by_variant


def _ift_also(claim: Claim, settings: Settings, roots: Sequence[Path], resamples: int) -> tuple[Beside, ...]:
    """The declared arms on each ``also`` model's runs (the first root holding them), beside the verdict."""
    test, rows = claim.test, []
    for tag, why in test.also:
        for root in roots:
            by_variant = _ift_runs(root, test.profile, (tag,), test.dataset)
            found = _compare(claim, by_variant, test.a, test.b, root, settings, resamples) \
                if test.a in by_variant and test.b in by_variant else None
            if found is not None:
                rows.append(_beside(f"{tag}: {why}", found[0], f"{test.profile}/{tag}: {found[1]}"))
                rows.extend(dataclasses.replace(cv, label=f"{tag}, {cv.label}")
                            for cv in _cross_validated(claim, by_variant, root, settings, resamples))
                break
    return tuple(rows)


def _ift_evidence(claim: Claim, settings: Settings, profile: str, resamples: int, model: str | None,
                  recorded: Path | None) -> Evidence:
    """The declared arms on the declared profile's runs of the declared models (the build's, else the recorded
    ones); where neither has them, the declared arms on the judged profile's own runs, at that profile's
    (smaller) scale, unless the claim names its models: those are its evidence, and another model is not.
    Where the claim names several pretrained models, their runs are one arm's, the models resampled above the
    fine-tuning seeds, and the arm waits until every model has runs of both arms."""
    test = claim.test
    judged_model = model_tag(model or profiles.get(profile).model)
    beside = _dev_selected(claim, settings, profile, judged_model, resamples)
    roots = [settings.results_root, *([recorded] if recorded not in (None, settings.results_root) else [])]
    places: list[tuple[str, tuple[str, ...], Path]] = [(profile, (judged_model,), settings.results_root)]
    if test.models:
        places = [(test.profile or profile, test.models, root) for root in roots]
    elif test.profile and test.profile != profile:  # the build's runs of the declared profile, else the recorded
        declared = (model_tag(profiles.get(test.profile).model),)
        places[:0] = [(test.profile, declared, root) for root in roots]
    beside += _ift_also(claim, settings, roots, resamples)
    for runs_profile, tags, root in places:
        by_variant = _ift_runs(root, runs_profile, tags, test.dataset)
        if test.a not in by_variant or test.b not in by_variant:
            continue
        several = len(tags) > 1
        pretraining = _pretrained_model if several else None
        have = [{r.model_tag for r in by_variant[arm]} for arm in (test.a, test.b)]
        if several and min(map(len, have)) < len(tags):  # a model's runs still to come: not the declared arms
            so_far = "; ".join(f"{arm}: {', '.join(sorted(h))}" for arm, h in zip((test.a, test.b), have, strict=True))
            found = _compare(claim, by_variant, test.a, test.b, root, settings, resamples, pretraining)
            partial = (_beside(f"so far ({so_far}; not the declared models)", found[0], found[1]),) if found else ()
            return Evidence(needs=f"runs of every declared model ({', '.join(tags)}) in both arms (so far: "
                                  f"{so_far}); {test.needs}", beside=beside + partial)
        found = _compare(claim, by_variant, test.a, test.b, root, settings, resamples, pretraining)
        if found is not None:
            where = "" if root == settings.results_root else " (recorded in reference/)"
            cv = _cross_validated(claim, by_variant, root, settings, resamples, pretraining)
            ra, rb = found[2]
            constant = constant_interval(ra.dataset, ra.ids, settings.data_root, resamples,
                                         claim_seed(claim.id))
            return _from(found[0], f"{runs_profile}/{'+'.join(tags)}{where}: {found[1]}",
                         scale_of(by_variant[test.a], root), beside + cv, ([ra], [rb]), constant, runs_profile)
    return Evidence(needs=test.needs, beside=beside)


def _table5_places(claim: Claim, settings: Settings, profile: str, recorded: Path | None) -> list[table5.Place]:
    """Where a Table 5 claim's runs may be, in the order its experiment gives them
    (:func:`medibio.experiments.table5.places`): the judged profile's scaled-down arms, then the CPU study's in
    the build's results root, then recorded in ``reference/``."""
    roots = [settings.results_root, *([recorded] if recorded not in (None, settings.results_root) else [])]
    return table5.places(claim.test.a, claim.test.b, profile, roots)


def _table5_sides(claim: Claim, settings: Settings, profile: str,
                  recorded: Path | None) -> Iterator[tuple[table5.Place, list[list[RunRecord]]]]:
    """Each place a Table 5 claim's runs may be (:func:`_table5_places`) with the newest records of its two
    configurations there."""
    for place in _table5_places(claim, settings, profile, recorded):
        yield place, [newest_configurations(load_records(place.root, profile=place.profile, variant=v))[0]
                      for v in (place.a, place.b)]


def _scored(sides: list[list[RunRecord]], root: Path) -> list[tuple[Path, str]]:
    """The prediction files to score ahead, unchecked: the reader of each score checks its file against the
    record (:meth:`RunRecord.predictions_file`) before it uses the score, so checking here too hashed every
    file twice."""
    return [(r.predictions_location(root), r.dataset) for side in sides for r in side if r.ok and r.predictions]


def start_scoring(claims: Sequence[Claim], settings: Settings, profile: str, recorded: Path | None) -> None:
    """Hand the prediction files the Table 5 claims read (most of what the claims read) to worker processes
    and return at once, so that they are scored while this process does other work (the paper's audit, the
    first claims). Where a file or record cannot be read, nothing is started: the claim that reads it says so."""
    if not settings.data_root.is_dir():
        return
    for claim in claims:
        if claim.test.kind != "table5":
            continue
        for place, sides in _table5_sides(claim, settings, profile, recorded):
            if all(any(r.ok and r.predictions for r in side) for side in sides):
                with contextlib.suppress(MedibioError):
                    score_side_by_side(_scored(sides, place.root), settings.data_root, wait=False)
                break


def _table5_evidence(claim: Claim, settings: Settings, profile: str, resamples: int,
                     recorded: Path | None) -> Evidence:
    """Configurations ``a`` vs ``b`` on the first place that has runs of both (:func:`_table5_places`):
    pretraining seeds, fine-tuning seeds and test units all resampled (a run's pretraining is its model)."""
    for place, sides in _table5_sides(claim, settings, profile, recorded):
        pairs = []
        for dataset in registry.names():
            ra, rb = (runs_of(recs, place.root, v, dataset, settings.data_root,
                              pretraining=lambda r: str((r.model or {}).get("hash", "")))
                      for recs, v in zip(sides, (place.a, place.b), strict=True))
            if ra is not None and rb is not None:
                pairs.append((ra, rb))
        if pairs:
            break
    else:
        return Evidence(needs=claim.test.needs)
    found = _table5_found(claim, pairs, sides, place, settings, resamples)
    return dataclasses.replace(found, anchor=STUDY_ANCHOR) if place.scale is table5.STUDY else found


def _table5_found(claim: Claim, pairs: list[tuple[Any, Any]], sides: list[list[RunRecord]], place: table5.Place,
                  settings: Settings, resamples: int) -> Evidence:
    """The evidence of a Table 5 claim from the runs of both configurations found at one place."""
    runs_profile, va, vb, root = place.profile, place.a, place.b, place.root
    names = [x.dataset for x, _ in pairs]
    large = [d for d in names if d in T5_SETS]
    per_set = {f"{_PER_SET}{d}": [d] for d in large}  # every statistic reads the same draws: the verdict's stay
    found = multi_bootstrap(pairs, {"primary": large, "plain": names, **per_set}, resamples, claim_seed(claim.id))
    beside = (_beside(f"plain mean over {len(names)} BLURB datasets", found["plain"], ", ".join(names)),)
    needs = (f"runs of both configurations on every one of the large BLURB sets ({', '.join(T5_SETS)}): the "
             f"declared statistic; {claim.test.needs}")
    if "primary" not in found:
        return Evidence(needs=needs, beside=beside)
    primary = found["primary"]
    if len(large) < len(T5_SETS):  # a mean over some of them is not the declared statistic (a queue under way)
        return Evidence(needs=f"{needs} (so far: {', '.join(large)})",
                        beside=(_beside(f"so far, mean over {len(large)} of the {len(T5_SETS)} large sets",
                                        primary, ", ".join(large)), *beside))
    where = "" if root == settings.results_root else " (recorded in reference/)"
    runs = (f"{runs_profile}{where}: {va} vs {vb}, mean over {len(primary.datasets)} large BLURB sets "
            f"({', '.join(primary.datasets)})")
    seeds = {v: sorted({label for runs_ in side for label in runs_.pretraining})
             for v, side in ((va, [x for x, _ in pairs]), (vb, [y for _, y in pairs]))}
    wanted = place.scale.seeds  # the pretraining seeds every arm of its scale needs
    if wanted and min(map(len, seeds.values())) < len(wanted):
        so_far = "; ".join(f"{v}: {len(s)} pretraining seed(s)" for v, s in seeds.items())
        return Evidence(needs=f"the {place.scale.description}'s {len(wanted)} pretraining seeds of each arm (recorded so far: "
                              f"{so_far}); {claim.test.needs}",
                        beside=(_beside(f"so far ({so_far}; their variance not resampled), mean over the large "
                                        "sets", primary, ", ".join(primary.datasets)), *beside))
    scale = "; against ".join(f"{arm}: {scale_of(side, root)}" for arm, side in zip((claim.test.a, claim.test.b),
                                                                                   sides, strict=True))
    chosen = [pair for pair in pairs if pair[0].dataset in primary.datasets]
    sets = tuple(_beside(f"{d} alone (the same draws; not the verdict's)", found[f"{_PER_SET}{d}"], d)
                 for d in primary.datasets)
    welch = _welch_over_models(chosen, (va, vb))
    found_ = _from(primary, runs, scale, (*beside, *sets, *welch), ([x for x, _ in chosen], [y for _, y in chosen]),
                   profile=runs_profile)
    return dataclasses.replace(found_, precisions=tuple(_precisions(side) for side in sides))


def _precisions(records: Sequence[RunRecord]) -> tuple[str, ...]:
    """The precisions an arm's fine-tuning runs computed in (``bf16``, ``fp32``), as their records say."""
    return tuple(sorted({precision.label((r.hyperparameters or {}).get("mixed_precision_used")) for r in records}))


def _welch_over_models(pairs: Sequence[tuple[Runs, Runs]], names: tuple[str, str]) -> tuple[Beside, ...]:
    """Welch's t-interval of A − B over the pretrained models of each arm, each model scored by its mean over
    the datasets of its fine-tuning seeds' mean: with two pretrained models per arm the multi-bootstrap cannot
    see how far a third would land, and this interval (one degree of freedom or two) shows what that costs.
    Empty when either arm has fewer than two pretrained models."""
    models = []
    for i in (0, 1):
        by_model: dict[str, list[float]] = {}
        for pair in pairs:
            scores = np.array(pair[i].scores)
            labels = np.array(pair[i].pretraining or [""] * len(scores))
            for label in sorted(set(labels)):
                by_model.setdefault(str(label), []).append(float(scores[labels == label].mean()))
        models.append([float(np.mean(v)) for v in by_model.values()])
    if min(len(m) for m in models) < 2:
        return ()
    welch = student.welch(models[0], models[1])
    low, high = welch.interval(CONFIDENCE)
    label = (f"Welch's t over the pretrained models ({len(models[0])} + {len(models[1])}, each its mean over the "
             f"{len(pairs)} sets; not the verdict's)")
    runs = "; ".join(f"{name}: {', '.join(f'{x:.2f}' for x in m)}" for name, m in zip(names, models, strict=True))
    return (Beside(label, float(np.mean(models[0]) - np.mean(models[1])), low, high, welch.pvalue, runs),)


def _fields_evidence(claim: Claim, settings: Settings, resamples: int) -> Evidence:
    path = settings.data_root / FIELD_METADATA
    if not path.is_file():
        return Evidence(needs=claim.test.needs)
    from medibio.fields.cooccurrence import count_fields
    from medibio.fields.fos import FIELDS

    counts = count_fields(path)
    margin, low, high, p, rival = field_margin(counts.masks, list(FIELDS), claim.test.dataset,
                                               MEDICINE_NEIGHBOURS, resamples, claim_seed(claim.id))
    runs = (f"{FIELD_METADATA.name}: {counts.papers:,} papers; 100 × C(Medicine, j), weakest of "
            f"{', '.join(MEDICINE_NEIGHBOURS)} minus the strongest other field ({rival}); bootstrap over papers")
    return Evidence(margin, low, high, p, runs, "", "papers", resamples, f"a sample of {counts.papers:,} papers")


def our_evidence(claim: Claim, settings: Settings, profile: str, resamples: int = VERDICT_RESAMPLES,
                 model: str | None = None, recorded: Path | None = REFERENCE_ROOT) -> Evidence:
    """Our evidence for ``claim`` on the runs of ``model`` (None: the profile's) on ``profile`` under
    ``settings.results_root``; a claim declared on a profile of its own reads that profile's runs there, or
    under ``recorded`` when the results root has none."""
    kind = claim.test.kind
    if kind == "none":
        return Evidence(needs=claim.test.needs)
    if kind == "fields":
        return _fields_evidence(claim, settings, resamples)
    if not settings.data_root.is_dir():
        return Evidence(needs=f"a data root (the gold test labels), then: {claim.test.needs}")
    try:
        if kind == "table5":
            return _table5_evidence(claim, settings, profile, resamples, recorded)
        return _ift_evidence(claim, settings, profile, resamples, model, recorded)
    except DataMissingError as exc:  # runs without their gold labels here: this claim waits, the others stand
        return Evidence(needs=f"{exc}; then: {claim.test.needs}")

