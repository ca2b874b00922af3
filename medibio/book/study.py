"""The Table 5 study's chapter tables, from its records only: its pretraining runs, the study's Table 6 and
probes, the pilot's gate and the loss curves.

The study itself (its design, and the runs it makes) is :mod:`medibio.experiments.table5` and
:mod:`medibio.experiments.study`; this module reads the records they leave and trains nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from medibio.core import precision
from medibio.experiments.table5 import (
    CONFIG,
    PILOT_TOKENS,
    PROFILE,
    STUDY,
    TOKENS,
    Arm,
    arm_config,
    pilot_gate,
    study_variant,
)
from medibio.models import zoo
from medibio.paper import tables
from medibio.pretrain.lineage import continued_from
from medibio.results.aggregate import newest_configurations
from medibio.results.recorded import REFERENCE_ROOT
from medibio.runs.records import RunRecord, load_records
from medibio.tasks import registry


def study_root(results_root: str | Path) -> Path:
    """Where the study's records are: the build's results root when it holds any, else ``reference/`` (the
    default book does not run the study; its runs are recorded once, see docs/pretraining.md)."""
    here = Path(results_root)
    return here if load_records(here, profile=CONFIG, kind="pretrain", legacy=False) else REFERENCE_ROOT


def _budget(arm: Arm, steps: int) -> str:
    """``pilot`` (5M tokens an arm), ``study`` (10M) or the steps of another budget, from a run's planned
    steps (the ``cs`` stage has half its arm's)."""
    names = {arm_config(arm, 1, tokens).max_steps: name for tokens, name in ((PILOT_TOKENS, "pilot"), (TOKENS, "study"))}
    return names.get(steps, f"{steps:,} steps")


# What each arm's corpus holds, in the table's words (``pretrain.corpus.NAMED_CORPORA`` names the files).
_READS = {"biomed-abstracts": "SumPubMed abstracts", "biomed-fulltext": "SumPubMed full texts",
          "cs": "computer-science papers (ScisummNet, unarXive; SciTLDR abstracts)"}


def _starts_from(arm: Arm) -> str:
    """What an arm starts from, in the table's words."""
    stage = STUDY.stage_of(arm)
    if stage is not None:
        return f"MiniLM after the {stage.id} stage"
    return {None: "random initialisation", "minilm": "MiniLM (all-MiniLM-L6-v2)"}.get(arm.init, str(arm.init))


def _precision(run: RunRecord) -> str:
    """``bf16`` (autocast) or ``fp32``: the precision a pretraining run computed in (its plan records it)."""
    return precision.label((run.details or {}).get("mixed_precision"))


def pretraining_frame(root: str | Path, config: str = CONFIG, profile: str = PROFILE) -> pd.DataFrame:
    """One row per recorded pretraining run of the study: arm, budget, seed, what it starts from and reads,
    its size, tokens seen, the final MLM loss, the time, precision and machine it took, and how many
    fine-tuning runs of ``profile`` start from it (none for a stage that another arm continues, or for a model
    whose weights were lost before it was fine-tuned: docs/pretraining.md)."""
    tuned = Counter((run.details or {}).get("pretraining_run")
                    for run in load_records(root, profile=profile, kind="finetune", legacy=False))
    rows = []
    for r in load_records(root, profile=config, kind="pretrain", legacy=False):
        arm = STUDY.arm_of(r.variant)
        if arm is None or not r.ok:
            continue
        d, env = r.details or {}, r.environment or {}
        steps = int((r.hyperparameters or {}).get("max_steps", 0))
        rows.append({"arm": f"#{arm.id}", "budget": _budget(arm, steps) if arm.pretrained else "—", "seed": r.seed,
                     "starts from": _starts_from(arm),
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


def recorded_runs(root: str | Path, tokens: int = TOKENS, profile: str = PROFILE) -> dict[str, list[RunRecord]]:
    """The recorded fine-tuning runs of each arm at a pretraining budget (the study's, or the pilot's), every
    pretraining seed's newest configuration, by arm id."""
    by_arm: dict[str, list[RunRecord]] = {}
    for arm in STUDY.arms:
        name = study_variant(arm, tokens)
        runs = newest_configurations(load_records(root, profile=profile, variant=name, legacy=False))[0]
        if runs := [r for r in runs if r.ok and r.score_test is not None]:
            by_arm[arm] = runs
    return by_arm


def recorded_pilot(root: str | Path, tokens: int = PILOT_TOKENS, profile: str = PROFILE) -> dict[str, Any] | None:
    """The pilot's gate judged on its recorded runs (no training), or None before they are recorded."""
    scores: dict[str, dict[str, list[float]]] = {}
    for arm, runs in recorded_runs(root, tokens, profile).items():
        for run in runs:
            scores.setdefault(arm, {}).setdefault(run.dataset, []).append(float(run.score_test))
    if "0" not in scores or "3" not in scores:
        return None
    return {"scores": scores, **pilot_gate(scores)}


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


def micro_table6(root: str | Path, tokens: int = TOKENS, profile: str = PROFILE) -> pd.DataFrame:
    """The study's Table 6: each arm's mean test score (over pretraining and fine-tuning seeds) on the sets it
    was fine-tuned on, their mean over the seven large sets, beside the paper's Table 6 column of the same
    configuration; with the runs and tokens behind each column."""
    rows: dict[str, dict[str, Any]] = {}
    for arm, runs in recorded_runs(root, tokens, profile).items():
        rows[f"ours #{arm}"] = {**_arm_column(runs), "tokens seen (M)": round(_tokens_here(runs[0], root) / 1e6, 2)}
        configuration = STUDY.arms[arm].configuration
        if configuration is not None:
            paper = tables.column_scores(6, configuration)
            rows[f"paper {configuration}"] = {
                **{name: paper.get(name) for name in rows[f"ours #{arm}"] if name in paper},
                "mean of the 7 large sets": round(float(np.mean([paper[n] for n in registry.LARGE_SETS])), 2),
                "runs": None, "pretraining seeds": 1, "tokens seen (M)": None}
    order = sorted(rows, key=lambda name: (name.split("#")[1], not name.startswith("ours")))  # #1 ours, paper, #2 ...
    return _study_columns(pd.DataFrame(rows).T.reindex(order))


def micro_probes(root: str | Path, tokens: int = TOKENS, profile: str = PROFILE) -> pd.DataFrame:
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


def _panel_order(arm_id: str) -> tuple[int, str]:
    """Panels in the paper's order, #1 to #4, then the stages they continue (#cs)."""
    return (0, arm_id) if arm_id.isdigit() else (1, arm_id)


def curves_frame(root: str | Path, config: str = CONFIG) -> pd.DataFrame:
    """The MLM loss curves of the study's recorded pretraining runs against tokens seen (millions): one line per
    arm, seed and precision (a run made again in another precision is another run), the newest record where a run
    was made again in the same precision (another machine, the same losses), at the study's budget (the pilot's
    shorter runs are its gate's, not the study's). ``run`` names the line, ``arm`` its panel (#1 to #4, then #cs)
    and ``line`` the line within the panel."""
    newest: dict[tuple[str, int, str], RunRecord] = {}
    for r in load_records(root, profile=config, kind="pretrain", legacy=False):
        arm = STUDY.arm_of(r.variant)
        steps = int((r.hyperparameters or {}).get("max_steps", 0))
        if arm is None or not r.ok or not (r.details or {}).get("curve") or _budget(arm, steps) != "study":
            continue
        key = (arm.id, r.seed, _precision(r))
        if key not in newest or (r.created or "") > (newest[key].created or ""):
            newest[key] = r
    frames = []
    for (arm_id, seed, how), r in sorted(newest.items(), key=lambda item: (_panel_order(item[0][0]), item[0][1:])):
        frame = pd.DataFrame(r.details["curve"])[["tokens_seen", "loss"]]
        frame["tokens (M)"] = frame.pop("tokens_seen") / 1e6
        frame["arm"] = f"#{arm_id}"
        frame["run"], frame["line"] = f"#{arm_id} seed {seed} ({how})", f"seed {seed}, {how}"
        frames.append(frame)
    return (pd.concat(frames, ignore_index=True) if frames
            else pd.DataFrame(columns=["tokens (M)", "loss", "run", "arm", "line"]))


def per_model_table(root: str | Path, tokens: int = TOKENS,
                    profile: str = PROFILE) -> tuple[pd.DataFrame, dict[tuple[str, str], str]]:
    """The study's Table 6 one pretraining seed at a time: each model's mean test score over its fine-tuning
    seeds per set, with its runs and tokens; and the links of :meth:`medibio.book.notebook.ChapterContext.table`
    from each score to the run page of that model's configuration on that set (an arm's column mixes two models,
    so the runs behind it are reached here)."""
    from medibio.book.runpages import run_page_url

    rows: dict[str, dict[str, Any]] = {}
    links: dict[tuple[str, str], str] = {}
    by_arm = recorded_runs(root, tokens, profile)
    for arm in sorted(by_arm, key=_panel_order):
        by_model: dict[str, list[RunRecord]] = {}
        for run in by_arm[arm]:
            by_model.setdefault(run.model_tag, []).append(run)
        for tag, runs in sorted(by_model.items()):
            seed = (zoo.split_pretrained_tag(tag) or ("", tag))[1]
            label = f"#{arm}, pretraining seed {seed}"
            by_set: dict[str, list[RunRecord]] = {}
            for run in runs:
                by_set.setdefault(run.dataset, []).append(run)
            rows[label] = {name: round(float(np.mean([float(r.score_test) for r in found])), 2)
                           for name, found in by_set.items()}
            rows[label]["fine-tuning runs"] = len(runs)
            rows[label]["tokens seen (M)"] = round(_tokens_here(runs[0], root) / 1e6, 2)
            links.update({(label, name): run_page_url(found[0]) for name, found in by_set.items()})
    frame = pd.DataFrame(rows).T
    columns = [c for c in [*registry.names(), "fine-tuning runs", "tokens seen (M)"] if c in frame.columns]
    return frame.reindex(columns=columns), links
