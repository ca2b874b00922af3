"""The numbers that chapters' prose glues, computed from the paper's tables, the profile's configuration and
the run records.

Each function returns ``{glue key: (value, format)}`` for :meth:`medibio.book.notebook.ChapterContext.glue_all`;
the sentences live in the chapters' markdown cells (``{glue:text}`key` ``). Every function returns the same
keys whatever the build holds (no runs, one seed, a capped test set), with ``None`` where a value does not
exist, so that every key a markdown cell names is glued on every profile.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd

Format = str | Callable[[Any], str]
Numbers = dict[str, tuple[Any, Format]]

POINTS = "{:+.2f}"  # a difference of scores, with its sign
SCORE = "{:.2f}"
P_VALUE = "{:.3f}"


def minutes(seconds: float) -> str:
    """A wall time as the prose reads it: "4 min 05 s", or "38 s" under a minute."""
    whole, secs = divmod(round(seconds), 60)
    return f"{whole} min {secs:02d} s" if whole else f"{secs} s"


def _or_all(cap: int | None) -> int | str:
    return "all" if cap is None else cap


def at_most(cap: int | str) -> str:
    """A sampling cap as the prose reads it: "at most 100", or "all" where nothing is sampled."""
    return cap if isinstance(cap, str) else f"at most {cap:,}"


def yes_no(flag: bool) -> str:
    return "yes" if flag else "no"


def pretrain_batch(config: Any, key: str) -> Numbers:
    """A pretraining configuration's batch layout and warm-up (``medibio.pretrain.configs``): sequences per
    device, processes, accumulation steps, their product, and the warm-up's share of the steps."""
    return {f"{key}_per_device": (config.per_device_batch, "{:,}"), f"{key}_processes": (config.paper_processes, "{}"),
            f"{key}_accumulation": (config.paper_accumulation, "{}"), f"{key}_batch": (config.effective_batch, "{:,}"),
            f"{key}_warmup": (config.warmup_steps, "{:,}"), f"{key}_steps": (config.max_steps, "{:,}"),
            f"{key}_warmup_share": (100 * config.warmup_steps / config.max_steps, "{:.0f}")}


def table4_gains(gains: pd.DataFrame, runs: int) -> Numbers:
    """Table 4's v2 − v1 differences (``medibio.paper.table4.paper_gains``): points, the same in standard
    deviations of each model, Welch's t and p; keys ``t4_<task>_*`` for NER, JRE and Coref."""
    out: Numbers = {"t4_runs": (runs, "{}")}
    for task, row in gains.iterrows():
        key = f"t4_{str(task).lower()}"
        out.update({f"{key}_diff": (float(row["v2 − v1"]), "{:+.1f}"),
                    f"{key}_sd_v1": (float(row["in sd of SciDeBERTa"]), "{:.1f}"),
                    f"{key}_sd_v2": (float(row["in sd of v2"]), "{:.1f}"),
                    f"{key}_t": (float(row["Welch t"]), "{:.2f}"),
                    f"{key}_p": (float(row["p"]), P_VALUE)})
    return out


def scierc_budget(cfg: Any, sizes: Mapping[str, int], layers: int, seeds: Sequence[int], model: str,
                  gpu_cfg: Any, gpu_seeds: Sequence[int]) -> Numbers:
    """What a SciERC configuration (``medibio.scierc.presets``) trains on and leaves out: seeds, documents
    used of each split, layers that learn, negative sampling (:func:`at_most`), and
    the ``gpu`` profile's budget for scale."""
    def used(cap: int | None, split: str) -> int:
        return sizes[split] if cap is None else min(cap, sizes[split])

    trained = layers if cfg.train_layers is None else min(cfg.train_layers, layers)
    return {"scierc_seeds_n": (len(seeds), counted("seed")), "scierc_seeds": (", ".join(map(str, seeds)), "{}"),
            "scierc_model": (model, "{}"), "scierc_epochs": (cfg.epochs, "{}"),
            "scierc_train_used": (used(cfg.max_train_docs, "train"), "{:,}"), "scierc_train_total": (sizes["train"], "{:,}"),
            "scierc_dev_used": (used(cfg.max_dev_docs, "dev"), "{:,}"), "scierc_dev_total": (sizes["dev"], "{:,}"),
            "scierc_test_used": (used(cfg.max_test_docs, "test"), "{:,}"), "scierc_test_total": (sizes["test"], "{:,}"),
            "scierc_test_official": (used(cfg.max_test_docs, "test") == sizes["test"], yes_no),
            "scierc_layers": (layers, "{}"), "scierc_layers_trained": (trained, "{}"),
            "scierc_layers_kept": (layers - trained, "{}"),
            "scierc_frozen_reused": (cfg.reuses_frozen_layers(layers), yes_no),
            "scierc_ner_negatives": (_or_all(cfg.ner_negatives), at_most),
            "scierc_relation_negatives": (_or_all(cfg.relation_negatives), at_most),
            "scierc_max_span_width": (cfg.max_span_width, "{}"),
            "scierc_gpu_epochs": (gpu_cfg.epochs, "{}"), "scierc_gpu_seeds": (len(gpu_seeds), "{}")}


def scierc_cost(summary: Mapping[str, Any], reach: Mapping[str, int]) -> Numbers:
    """What the runs cost (``medibio.results.scierc.runs_summary``) and what no model with the profile's span
    width can find (``unreachable``); without runs the costs read "–"."""
    ran = summary["runs"] > 0
    def when_ran(value: Any) -> Any:
        return value if ran else None

    return {"scierc_runs": (summary["runs"], "{}"),
            "wall_total_s": (when_ran(round(summary["wall_total_s"], 1)), minutes),
            "scierc_wall_per_run": (when_ran(summary["wall_per_run_s"]), minutes),
            "scierc_device": (when_ran(summary["device"]), "{}"),
            "scierc_docs_per_s": (when_ran(summary["train_docs_per_s"]), "{:.1f}"),
            "scierc_docs_per_s_min": (when_ran(summary["train_docs_per_s_min"]), "{:.1f}"),
            "scierc_docs_per_s_max": (when_ran(summary["train_docs_per_s_max"]), "{:.1f}"),
            "scierc_train_docs": (when_ran(summary["train_docs"]), "{:,}"),
            "unreachable_test_entities": (reach["too_wide"], "{:,}"),
            "scierc_test_entities": (reach["entities"], "{:,}"),
            "scierc_unreachable_share": (100 * reach["too_wide"] / max(1, reach["entities"]), "{:.1f}"),
            "scierc_unreachable_relations": (reach["relations_touching"], "{:,}"),
            "scierc_test_relations": (reach["relations"], "{:,}")}


def ift_summary(ift: pd.DataFrame, baseline: str, chosen: str | None) -> Numbers:
    """The intermediate task chosen on dev (``medibio.results.ift.best_intermediate``) against fine-tuning
    directly, from the IFT table: both means, the gain with its paired 95% interval and p-value, how many of
    the intermediate tasks tried give a significant gain, and the frozen encoder's score."""
    row = ift.loc[chosen] if chosen in ift.index else None
    tried = ift.drop(index=baseline)
    significant = int((tried["significant"] == "yes").sum()) if "significant" in tried else None

    def of(column: str) -> Any:
        return None if row is None or column not in row or row[column] in ("", None) else row[column]

    return {"ift_chosen": (chosen, "{}"), "ift_tried": (len(tried), "{}"), "ift_significant_n": (significant, "{}"),
            "ift_chosen_mean": (of("mean"), SCORE), "ift_direct_mean": (float(ift.loc[baseline, "mean"]), SCORE),
            "ift_chosen_gain": (of("gain over baseline"), POINTS), "ift_chosen_gain_ci": (of("95% CI of the gain"), "{}"),
            "ift_chosen_p": (of("p"), P_VALUE), "ift_chosen_significant": (of("significant"), "{}"),
            "ift_frozen": (ift.loc[baseline, "frozen encoder"] if "frozen encoder" in ift else None, SCORE),
            "ift_direct_seeds": (int(ift.loc[baseline, "n"]) if "n" in ift else None, "{}")}


def below_frozen(rows: Sequence[str], key: str) -> Numbers:
    """The rows of a table under their frozen-encoder baseline, as a list ("none" when there are none)."""
    return {f"{key}_n": (len(rows), "{}"), key: (", ".join(rows) or "none", "{}")}


LARGE_MEAN = "mean of the 7 large sets"  # the study table's column of the Table 5 claims' statistic


def study_reading(table: pd.DataFrame) -> Numbers:
    """The Tables 5–6 chapter's first sentence, from the study's Table 6 (:func:`medibio.book.study.micro_table6`):
    each arm's mean over the seven large BLURB sets, ours and the paper's, best first; ``study_reading`` is
    None (read "–") before the study is recorded."""
    if table.empty or LARGE_MEAN not in table.columns:
        return {"study_reading": (None, "{}")}
    means = pd.to_numeric(table[LARGE_MEAN], errors="coerce").dropna()
    ours = means[[str(i).startswith("ours ") for i in means.index]].sort_values(ascending=False)
    paper = means[[str(i).startswith("paper ") for i in means.index]].sort_values(ascending=False)
    if ours.empty:
        return {"study_reading": (None, "{}")}

    def listed(values: pd.Series, prefix: str) -> str:
        return ", ".join(f"{str(i).removeprefix(prefix)} {v:.2f}" for i, v in values.items())

    text = (f"On the mean over the seven large BLURB sets, the arms pretrained on this CPU rank {listed(ours, 'ours ')}"
            + (f"; the paper's same configurations rank {listed(paper, 'paper ')}" if not paper.empty else "")
            + ".")
    return {"study_reading": (text, "{}")}


def table7_reading(compared: pd.DataFrame, ours: str, columns: Sequence[str]) -> Numbers:
    """The Table 7 chapter's first sentence: our direct mean over the datasets we scored beside each paper
    column's mean over the same datasets (``compared``: :func:`medibio.book.results.versus_paper`'s table)."""
    scored = compared.dropna(subset=[ours])
    if scored.empty:
        return {"t7_reading": (None, "{}")}
    beside = [f"{name} {scored[name].mean():.2f}" for name in columns if scored[name].notna().all()]
    text = (f"Fine-tuned directly on {len(scored)} BLURB sets, our model averages {scored[ours].mean():.2f} on them"
            + (f", against {' and '.join(beside)} on the same sets in the paper's Table 7" if beside else "") + ".")
    return {"t7_reading": (text, "{}")}


def _listed(items: Sequence[str]) -> str:
    """Items as prose lists them: "a", "a and b", "a, b and c"."""
    return " and ".join(items) if len(items) < 3 else ", ".join(items[:-1]) + " and " + items[-1]


def fields_reading(closest: Sequence[tuple[str, float]], papers: int, paper_group: Sequence[str]) -> Numbers:
    """The Figures 2–4 chapter's first sentence: the fields medicine papers most often also carry
    (``FieldAnalysis.closest``, shares of 1), as many as the paper's group has, and whether they are the paper's."""
    top = list(closest)[:len(paper_group)]
    if not top:
        return {"fields_reading": (None, "{}")}
    found = _listed([f"{field.lower()} ({100 * share:.1f} %)" for field, share in top])
    same = {field for field, _ in top} == set(paper_group)
    text = (f"On this build's {papers:,}-paper S2ORC sample, the fields that medicine papers most often also carry "
            f"are {found}: " + ("the three the paper keeps with medicine." if same else
                                f"the paper keeps {_listed([f.lower() for f in paper_group])}."))
    return {"fields_reading": (text, "{}")}


def table3_reading(rendered: pd.DataFrame, printed: pd.DataFrame, config: Any, run: Mapping[str, Any] | None,
                   name: str) -> Numbers:
    """The Table 3 chapter's first sentence: how many cells of Table 3 rendered from the pretraining code
    (``configs.table3``) equal the paper's transcription (a rendered cell may add its batch layout in
    parentheses), MediBioDeBERTa's schedule, and what this build's own run of ``name`` reached."""
    cells = [(str(a).split(" (")[0], str(b)) for a, b in zip(rendered.to_numpy().ravel(), printed.to_numpy().ravel(),
                                                             strict=True)]
    same = sum(a == b for a, b in cells)
    text = (f"Rendered from the configurations the pretraining code reads, Table 3 equals the paper's in {same} of "
            f"{len(cells)} cells: MediBioDeBERTa continues SciDeBERTa v2 for {config.max_steps:,} steps of "
            f"{config.effective_batch:,} sequences at a peak learning rate of {config.learning_rate:g}")
    if run:
        text += (f"; this build's own run (configuration {name}) made {int(run['steps_done']):,} steps to a masked-LM "
                 f"loss of {float(run['final_loss']):.2f}")
    return {"t3_reading": (text + ".", "{}")}


def table4_reading(gains: pd.DataFrame, runs: int, ours: Mapping[str, float], model: str, seeds: int) -> Numbers:
    """The Table 4 chapter's first sentence: the paper's SciDeBERTa v2 − SciDeBERTa per task with Welch's p
    (``medibio.paper.table4.paper_gains``), then the F1 our span model reached (mean over ``seeds``; ``ours``
    maps NER, REL and Coref to it, empty without runs)."""
    tasks = [f"{task} {row['v2 − v1']:+.1f} ({'Welch ' if not i else ''}p = {row['p']:.3f})"
             for i, (task, row) in enumerate(gains.iterrows())]
    text = f"In the paper's Table 4 ({runs} runs per model), SciDeBERTa v2 − SciDeBERTa in F1 points is {_listed(tasks)}"
    scored = {task: f1 for task, f1 in ours.items() if pd.notna(f1)}
    if scored:
        text += (f"; our span model on this build ({model}, {seeds} seed{'s' if seeds != 1 else ''}) reaches F1 "
                 + _listed([f"{task} {f1:.1f}" for task, f1 in scored.items()])
                 + ", a check that the pipeline learns the three tasks rather than a measure of the encoder")
    return {"t4_reading": (text + ".", "{}")}


def counted(noun: str) -> Callable[[Any], str]:
    """A count with its noun, singular or plural as the count asks ("1 seed", "3 seeds"): never "3 seed(s)"."""
    return lambda n: f"{n:,} {noun}{'' if n == 1 else 's'}"


def audit_reading(checks: int, inconsistent: int) -> Numbers:
    """Appendix A's first sentence: how many of the paper's derived numbers do not follow from their parts."""
    text = (f"Of the paper's {checks} numbers that can be recomputed from other numbers it prints, {inconsistent} do "
            "not add up within one unit of their last printed digit.")
    return {"audit_reading": (text, "{}")}


def reproducibility_reading(records: int, compared: int, identical: int, changed: int,
                            checksums: tuple[int, int] | None, from_recorded: bool = False) -> Numbers:
    """Appendix B's first sentence: the run records this build read, how many of the ``compared`` runs whose
    test predictions ``reference/`` also records gave the same ones, how many verdicts differ from reference/'s,
    and (with a data root) how many data files differ from their checksums, of ``checksums`` = (files, mismatches).
    A build rendered from the recorded runs (``from_recorded``) says that its predictions and verdicts are
    reference/'s own, identical by construction: the comparison checks a re-execution, which this is not."""
    same = (f"{identical} of the {compared} runs whose test predictions reference/ also records gave byte-identical ones"
            if compared else "reference/ records the test predictions of none of its runs")
    text = f"This build read {records:,} run records; {same}, and {changed} of the claims' verdicts differ from reference/'s"
    if from_recorded:
        text = (f"This build read {records:,} run records and was rendered from the runs recorded in reference/, "
                "so its test predictions and the claims' verdicts are reference/'s own: identical by construction, "
                "not a re-execution (a build that trains again is compared with them below)")
    if checksums is not None:
        text += f"; {checksums[1]} of the {checksums[0]:,} data files differ from their checksums"
    return {"b_reading": (text + ".", "{}")}
