"""The Table 5 study's pilot: the pretrained arms fine-tuned on three BLURB sets, and the go/no-go.

The pilot pretrains #3 (scratch, abstracts) and #4 (scratch, full text) on 5M tokens each
(:mod:`medibio.pretrain.study`, in units) and fine-tunes them beside #0 (random initialisation) on
BC5-chem, NCBI-disease and ChemProt under the ``cpu-study`` profile; the study goes on only if #3 beats #0
by ``GO_MARGIN`` F1 points on the mean over the three sets (:func:`medibio.pretrain.study.pilot_gate`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from medibio.baselines import frozen
from medibio.core import precision, profiles
from medibio.core.errors import MedibioError
from medibio.core.settings import Settings
from medibio.finetune.runner import run_finetune
from medibio.paper import tables
from medibio.pretrain import study
from medibio.pretrain.configs import PretrainConfig
from medibio.pretrain.trainer import continued_from, model_reference
from medibio.results.aggregate import newest_configurations
from medibio.results.recorded import REFERENCE_ROOT
from medibio.runs.records import RunRecord, load_records
from medibio.tasks import registry

PROFILE = "cpu-study"  # the study's fine-tuning runs (the cpu budgets, 3 seeds)
PILOT_TASKS = ("BC5-chem", "NCBI-disease", "ChemProt")
PILOT_ARMS = ("0", "3", "4")


def variant(arm: str, tokens: int) -> str:
    """The fine-tuning runs' variant of an arm: ``study-3`` at the study's budget, ``study-3-5M`` at another
    (the pilot's). Every pretraining seed of an arm shares it; the model (``study-3-s1``) tells them apart."""
    name = f"study-{study.get_arm(arm).id}"
    if tokens == study.TOKENS:
        return name
    return f"{name}-{tokens // 1_000_000}M" if tokens % 1_000_000 == 0 else f"{name}-{tokens}tokens"


def finetune_arms(settings: Settings, arms: Sequence[str] = PILOT_ARMS, tasks: Sequence[str] = PILOT_TASKS,
                  tokens: int = study.PILOT_TOKENS, pretrain_seeds: Sequence[int] = (1,),
                  seeds: Sequence[int] | None = None, profile: str = PROFILE,
                  config: PretrainConfig | str = study.CONFIG, probes: bool = False) -> dict[str, list[RunRecord]]:
    """Fine-tune every arm's finished pretrained models on ``tasks`` with ``seeds`` (None: the profile's) and
    return the records by arm; with ``probes``, also the frozen-encoder probes of each model on the same tasks
    (no fine-tuning noise). The runs start from ``pretrain-run:`` names, so they are planned from the
    pretraining runs' identities and found without their weights. A pretraining run not finished stops it,
    naming the command that goes on with it."""
    records: dict[str, list[RunRecord]] = {}
    for arm_id in arms:
        arm = study.get_arm(arm_id)
        for pretrain_seed in pretrain_seeds:
            pretrained = study.finished(arm, pretrain_seed, tokens, settings, config)
            if pretrained is None:
                done = study.steps_done(arm, pretrain_seed, tokens, settings, config)
                total = study.arm_config(arm, pretrain_seed, tokens, config).max_steps
                raise MedibioError(f"arm #{arm.id} (pretraining seed {pretrain_seed}) has {done} of {total} steps; "
                                   f"`medibio study unit --arm {arm.id} --seed {pretrain_seed} --tokens {tokens}` "
                                   "goes on with it")
            model = model_reference(pretrained)
            records.setdefault(arm.id, []).extend(
                run_finetune(list(tasks), model=model, seeds=seeds, profile=profile,
                             variant=variant(arm.id, tokens), settings=settings))
            if probes:
                frozen.baselines(profile, list(tasks), model=model, settings=settings)
    return records


class FinetuneProgress(NamedTuple):
    """One pretrained model's fine-tuning in the study: runs recorded of those planned, frozen probes recorded,
    and the seconds they took (their records' wall times)."""

    runs: int
    planned: int
    probes: int
    seconds: float


def tuned_records(settings: Settings, profile: str = PROFILE) -> dict[str, list[RunRecord]]:
    """The results root's fine-tuning runs and frozen probes of ``profile``, by kind: read once and passed to
    :func:`finetune_progress` for every arm and seed."""
    return {kind: load_records(settings.results_root, profile=profile, kind=kind, legacy=False)
            for kind in ("finetune", "frozen")}


def finetune_progress(settings: Settings, arm: str, pretrain_seed: int, tokens: int = study.TOKENS,
                      profile: str = PROFILE, config: PretrainConfig | str = study.CONFIG,
                      tuned: Mapping[str, Sequence[RunRecord]] | None = None) -> FinetuneProgress:
    """How far one arm's pretrained model is fine-tuned in the results root (nothing before its pretraining
    finished): the queue's step ``finetune`` plans the seven large sets with the profile's seeds, and a probe
    per set; the pilot (its budget) planned its three sets. ``tuned`` is :func:`tuned_records`' answer, read
    here when not given."""
    tasks = PILOT_TASKS if tokens == study.PILOT_TOKENS else registry.LARGE_SETS
    planned = len(tasks) * len(profiles.get(profile).seeds)
    pretrained = study.finished(study.get_arm(arm), pretrain_seed, tokens, settings, config)
    if pretrained is None:
        return FinetuneProgress(0, planned, 0, 0.0)
    name = model_reference(pretrained)
    tuned = tuned_records(settings, profile) if tuned is None else tuned
    runs = [r for r in tuned["finetune"] if r.variant == variant(arm, tokens) and (r.model or {}).get("name") == name]
    probes = [r for r in tuned["frozen"] if (r.model or {}).get("name") == name]
    return FinetuneProgress(len(runs), planned, len(probes), sum(r.wall_time_s or 0.0 for r in [*runs, *probes]))


def status_lines(settings: Settings, tokens: int = study.TOKENS, profile: str = PROFILE,
                 config: PretrainConfig | str = study.CONFIG) -> list[str]:
    """Where every arm and pretraining seed of the study stands (``medibio study status``): steps and their
    step time, the time a run under way still needs at its own pace so far, its fine-tuning runs and frozen
    probes and their time; then the study's time in all. Each queue's step runs on one thread, so its seconds
    are one core's."""
    lines, pretrained, tuned, left = [], 0.0, 0.0, []
    records = tuned_records(settings, profile)
    for arm in study.ARMS.values():
        for seed in study.SEEDS:
            total = study.arm_config(arm, seed, tokens, config).max_steps
            steps, seconds = study.progress(arm, seed, tokens, settings, config)
            pretrained += seconds
            line = f"#{arm.id} seed {seed}: {steps}/{total} steps, {seconds / 3600:.2f} h"
            if 0 < steps < total:
                more = seconds / steps * (total - steps)
                left.append(more)
                line += f" (about {more / 3600:.1f} h more at its pace)"
            if arm.id != study.CS_STAGE:  # a stage is not fine-tuned
                ft = finetune_progress(settings, arm.id, seed, tokens, profile, config, records)
                tuned += ft.seconds
                line += f"; fine-tuned {ft.runs}/{ft.planned} runs, {ft.probes} frozen probes, {ft.seconds / 3600:.2f} h"
            lines.append(line)
    under_way = (f"; the runs under way need about {sum(left) / 3600:.1f} CPU-hours more of pretraining (the "
                 f"longest {max(left) / 3600:.1f} h)" if left else "")
    lines.append(f"step time at this budget so far: pretraining {pretrained / 3600:.2f} h, fine-tuning {tuned / 3600:.2f} h, "
                 f"{(pretrained + tuned) / 3600:.2f} CPU-hours in all (one thread a run){under_way}; "
                 "docs/pretraining.md estimates the rest")
    return lines


def pilot(settings: Settings, **options: Any) -> dict[str, Any]:
    """Fine-tune the pilot's arms (:func:`finetune_arms`) and judge the gate on their test scores."""
    records = finetune_arms(settings, **options)
    scores = {arm: {} for arm in records}
    for arm, runs in records.items():
        for run in runs:
            if not run.ok or run.score_test is None:
                raise MedibioError(f"pilot arm {arm}: {run.run_id} has no test score ({run.status}: "
                                   f"{run.reason or 'no reason recorded'}); the gate needs every run")
            scores[arm].setdefault(run.dataset, []).append(float(run.score_test))
    return {"scores": scores, **study.pilot_gate(scores)}


# --------------------------------------------------------------------------- the chapter's tables (records only)

PAPER_ROW = {"1": "#1", "2": "#2", "3": "#3", "4": "#4"}  # study arm -> paper Table 5/6 configuration


def study_root(results_root: str | Path) -> Path:
    """Where the study's records are: the build's results root when it holds any, else ``reference/`` (the
    default book does not run the study; its runs are recorded once, see docs/pretraining.md)."""
    here = Path(results_root)
    return here if load_records(here, profile=study.CONFIG, kind="pretrain", legacy=False) else REFERENCE_ROOT


def _arm_of(variant: str) -> str:
    return variant.split("-")[1]


def _budget(arm: study.Arm, steps: int) -> str:
    """``pilot`` (5M tokens an arm), ``study`` (10M) or the steps of another budget, from a run's planned
    steps (the ``cs`` stage has half its arm's)."""
    names = {study.arm_config(arm, 1, tokens).max_steps: name
             for tokens, name in ((study.PILOT_TOKENS, "pilot"), (study.TOKENS, "study"))}
    return names.get(steps, f"{steps:,} steps")


# What each arm's corpus holds, in the table's words (``pretrain.corpus.NAMED_CORPORA`` names the files).
_READS = {"biomed-abstracts": "SumPubMed abstracts", "biomed-fulltext": "SumPubMed full texts",
          "cs": "computer-science papers (ScisummNet, unarXive; SciTLDR abstracts)"}


def _precision(run: RunRecord) -> str:
    """``bf16`` (autocast) or ``fp32``: the precision a pretraining run computed in (its plan records it)."""
    return precision.label((run.details or {}).get("mixed_precision"))


def pretraining_frame(root: str | Path, config: str = study.CONFIG, profile: str = PROFILE) -> pd.DataFrame:
    """One row per recorded pretraining run of the study: arm, budget, seed, what it starts from and reads,
    its size, tokens seen, the final MLM loss, the time, precision and machine it took, and how many
    fine-tuning runs of ``profile`` start from it (none for a stage that another arm continues, or for a model
    whose weights were lost before it was fine-tuned: docs/pretraining.md)."""
    tuned = Counter((run.details or {}).get("pretraining_run")
                    for run in load_records(root, profile=profile, kind="finetune", legacy=False))
    rows = []
    for r in load_records(root, profile=config, kind="pretrain", legacy=False):
        arm = study.ARMS.get(_arm_of(r.variant))
        if arm is None or not r.ok:
            continue
        d, env = r.details or {}, r.environment or {}
        steps = int((r.hyperparameters or {}).get("max_steps", 0))
        rows.append({"arm": f"#{arm.id}", "budget": _budget(arm, steps) if arm.pretrained else "—", "seed": r.seed,
                     "starts from": {None: "random initialisation", "minilm": "MiniLM (all-MiniLM-L6-v2)",
                                     study.CS_STAGE: "MiniLM after the cs stage"}[arm.init],
                     "reads": _READS.get(arm.corpus, arm.corpus) if arm.pretrained else "nothing",
                     "parameters (M)": round((d.get("architecture") or {}).get("parameters", 0) / 1e6, 1),
                     "tokens seen (M)": round(d.get("tokens_seen", 0) / 1e6, 2), "steps": d.get("steps_done"),
                     "final MLM loss": None if not d.get("steps_done") else round(float(d["final_loss"]), 3),
                     "held-out MLM loss (BLURB dev)": None if (d.get("heldout") or {}).get("loss") is None
                     else round(float(d["heldout"]["loss"]), 3),
                     "hours": round((r.wall_time_s or 0) / 3600, 2), "precision": _precision(r),
                     "device": env.get("device", "?"),
                     "CPU": env.get("cpu") or "not recorded (docs/pretraining.md names it)",
                     "fine-tuning runs": tuned.get(r.run_id, 0), "run": r.run_id})
    return pd.DataFrame(rows)


def recorded_runs(root: str | Path, tokens: int = study.TOKENS, profile: str = PROFILE) -> dict[str, list[RunRecord]]:
    """The recorded fine-tuning runs of each arm at a pretraining budget (the study's, or the pilot's), every
    pretraining seed's newest configuration, by arm id."""
    by_arm: dict[str, list[RunRecord]] = {}
    for arm in study.ARMS:
        name = variant(arm, tokens)
        runs = newest_configurations(load_records(root, profile=profile, variant=name, legacy=False))[0]
        if runs := [r for r in runs if r.ok and r.score_test is not None]:
            by_arm[arm] = runs
    return by_arm


def recorded_pilot(root: str | Path, tokens: int = study.PILOT_TOKENS, profile: str = PROFILE) -> dict[str, Any] | None:
    """The pilot's gate judged on its recorded runs (no training), or None before they are recorded."""
    scores: dict[str, dict[str, list[float]]] = {}
    for arm, runs in recorded_runs(root, tokens, profile).items():
        for run in runs:
            scores.setdefault(arm, {}).setdefault(run.dataset, []).append(float(run.score_test))
    if "0" not in scores or "3" not in scores:
        return None
    return {"scores": scores, **study.pilot_gate(scores)}


def _arm_column(runs: Sequence[RunRecord]) -> dict[str, Any]:
    """An arm's column of the study's tables: its mean test score per set over every model (pretraining seed)
    and seed, their mean over the seven large sets (once it has all seven), and the runs and models behind it."""
    by_set: dict[str, list[float]] = {}
    for run in runs:
        by_set.setdefault(run.dataset, []).append(float(run.score_test))
    ours = {name: float(np.mean(v)) for name, v in by_set.items()}
    large = [ours[name] for name in registry.LARGE_SETS if name in ours]
    return {**{name: round(v, 2) for name, v in ours.items()},
            "mean of the 7 large sets": round(float(np.mean(large)), 2) if len(large) == len(registry.LARGE_SETS)
            else None,
            "runs": len(runs), "pretraining seeds": len({(r.model or {}).get("hash") for r in runs})}


def _study_columns(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.reindex(columns=[c for c in [*registry.names(), "mean of the 7 large sets", "runs",
                                              "pretraining seeds", "tokens seen (M)"] if c in frame.columns])


def _tokens_here(run: RunRecord, root: str | Path) -> float:
    """The tokens our pretraining showed a fine-tuned model, every stage of its chain counted (the #1 analog:
    the cs stage's and then the abstracts'), not the model's training made elsewhere."""
    details = run.details or {}
    _, stages = continued_from(details.get("pretraining_run", ""), Path(root)) or ("", ())
    return float(sum(stages) + (details.get("pretraining_tokens") or 0))


def micro_table6(root: str | Path, tokens: int = study.TOKENS, profile: str = PROFILE) -> pd.DataFrame:
    """The study's Table 6: each arm's mean test score (over pretraining and fine-tuning seeds) on the sets it
    was fine-tuned on, their mean over the seven large sets, beside the paper's Table 6 column of the same
    configuration; with the runs and tokens behind each column."""
    rows: dict[str, dict[str, Any]] = {}
    for arm, runs in recorded_runs(root, tokens, profile).items():
        rows[f"ours #{arm}"] = {**_arm_column(runs), "tokens seen (M)": round(_tokens_here(runs[0], root) / 1e6, 2)}
        if arm in PAPER_ROW:
            paper = tables.column_scores(6, PAPER_ROW[arm])
            rows[f"paper {PAPER_ROW[arm]}"] = {
                **{name: paper.get(name) for name in rows[f"ours #{arm}"] if name in paper},
                "mean of the 7 large sets": round(float(np.mean([paper[n] for n in registry.LARGE_SETS])), 2),
                "runs": None, "pretraining seeds": 1, "tokens seen (M)": None}
    order = sorted(rows, key=lambda name: (name.split("#")[1], not name.startswith("ours")))  # #1 ours, paper, #2 ...
    return _study_columns(pd.DataFrame(rows).T.reindex(order))


def micro_probes(root: str | Path, tokens: int = study.TOKENS, profile: str = PROFILE) -> pd.DataFrame:
    """The frozen-encoder probes of the models the study fine-tuned at a budget: a logistic regression on each
    model's frozen embeddings per set (:mod:`medibio.baselines.frozen`), so what pretraining put into the
    encoder shows without fine-tuning's noise; the mean over pretraining seeds, by arm."""
    probes = load_records(root, profile=profile, kind="frozen", legacy=False)
    rows: dict[str, dict[str, Any]] = {}
    for arm, runs in recorded_runs(root, tokens, profile).items():
        models = {(r.model or {}).get("name") for r in runs}
        mine = newest_configurations(p for p in probes if (p.model or {}).get("name") in models)[0]
        if mine := [p for p in mine if p.ok and p.score_test is not None]:
            rows[f"#{arm} frozen"] = _arm_column(mine)
    return _study_columns(pd.DataFrame(rows).T).rename(columns={"runs": "probes"})


def curves_frame(root: str | Path, config: str = study.CONFIG) -> pd.DataFrame:
    """The MLM loss curves of the study's recorded pretraining runs against tokens seen (millions), one line
    per arm, seed, budget and precision (a run made again in another precision is another run): ``run`` names
    the line, ``arm`` its panel and ``line`` the line within the panel."""
    frames = []
    for r in load_records(root, profile=config, kind="pretrain", legacy=False):
        curve = (r.details or {}).get("curve") or []
        if r.ok and curve:
            frame = pd.DataFrame(curve)[["tokens_seen", "loss"]]
            frame["tokens (M)"] = frame.pop("tokens_seen") / 1e6
            steps = int((r.hyperparameters or {}).get("max_steps", 0))
            arm = study.ARMS[_arm_of(r.variant)]
            frame["run"] = f"#{arm.id} seed {r.seed} ({_budget(arm, steps)}, {_precision(r)})"
            frame["arm"] = f"#{arm.id}"
            frame["line"] = f"seed {r.seed}, {_budget(arm, steps)}, {_precision(r)}"
            frames.append(frame)
    return (pd.concat(frames, ignore_index=True) if frames
            else pd.DataFrame(columns=["tokens (M)", "loss", "run", "arm", "line"]))
