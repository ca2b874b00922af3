"""The Table 4 chapter's sentences that carry numbers, formatted from data (the paper's table, the profile's
configuration, the run records), so that no number in the chapter's prose is typed by hand.

Each function returns Markdown; the chapter displays it (``IPython.display.Markdown``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from medibio.paper.audit import RUNS_TABLE4


def _minutes(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes} min {secs} s" if minutes else f"{secs} s"


def _of(part: int | None, whole: int) -> str:
    return f"all {whole}" if part is None or part >= whole else f"a random {part} of the {whole}"


def paper_gains(gains: pd.DataFrame) -> str:
    """Table 4's differences, each in standard deviations and as a Welch test (from
    :func:`medibio.paper.table4.paper_gains`)."""
    parts = [f"{task} {row['v2 − v1']:+.1f} points, {row['in sd of SciDeBERTa']:.1f} standard deviations of "
             f"SciDeBERTa and {row['in sd of v2']:.1f} of v2 (Welch t = {row['Welch t']:.2f}, p = {row['p']:.3f})"
             for task, row in gains.iterrows()]
    return (f"With {RUNS_TABLE4} runs per model, Table 4's differences of SciDeBERTa v2 over SciDeBERTa are: "
            + "; ".join(parts) + ". The audit chapter lists the corresponding checks.")


def economies(cfg: Any, sizes: Mapping[str, int], layers: int, seeds: Sequence[int]) -> str:
    """What the profile's configuration trains on and what it leaves out, as a bullet list."""
    items = [f"**{len(seeds)} seed{'s' if len(seeds) != 1 else ''}**, each training on "
             f"{_of(cfg.max_train_docs, sizes['train'])} training abstracts for {cfg.epochs} epochs;"]
    if cfg.train_layers is not None:
        items.append(f"only the encoder's **top {cfg.train_layers} of {layers} layers learn** (`train_layers`); the "
                     f"embeddings and the {max(0, layers - cfg.train_layers)} layers below stay as pretrained, so "
                     f"backpropagation stops early (the measurements behind this choice are noted beside the "
                     f"profile's values in `medibio/core/profiles.py`);")
    if cfg.ner_negatives is not None or cfg.relation_negatives is not None:
        items.append(f"**negative sampling** (as in SpERT): each step sees every gold entity and relation of a "
                     f"document but at most {cfg.ner_negatives} of its other spans (`ner_negatives`) and "
                     f"{cfg.relation_negatives} of its unrelated pairs (`relation_negatives`). With all of them, as "
                     f"DyGIE++ and PURE train for tens of epochs, a few hundred steps leave every span at \"no "
                     f"entity\" and every pair at \"no relation\";")
    items.append(f"model selection on {_of(cfg.max_dev_docs, sizes['dev'])} dev abstracts;")
    test = f"the test set: {_of(cfg.max_test_docs, sizes['test'])} test abstracts"
    if cfg.max_test_docs is not None and cfg.max_test_docs < sizes["test"]:
        test += " — **not** the official test set: these scores are not comparable to published ones"
    items.append(test + ".")
    return "\n".join(f"* {item}" for item in items)


def runs(summary: Mapping[str, Any], reach: Mapping[str, int], max_span_width: int) -> str:
    """What the chapter's runs cost (from the records) and what no model with this span width can find."""
    if not summary["runs"]:
        return "No SciERC run finished on this profile."
    n = summary["runs"]
    share = 100 * reach["too_wide"] / max(1, reach["entities"])
    runs_took = (f"The {n} runs behind this chapter took {_minutes(summary['wall_total_s'])} in all "
                 f"({_minutes(summary['wall_per_run_s'])} per run on average, on" if n > 1 else
                 f"The run behind this chapter took {_minutes(summary['wall_total_s'])} (on")
    spread = (f" ({summary['train_docs_per_s_min']:.1f}–{summary['train_docs_per_s_max']:.1f} over runs)"
              if n > 1 else "")
    return (f"{runs_took} {summary['device']}), measured when trained: a record's wall time covers reading "
            f"and featurising the data, loading the encoder, training with a dev evaluation after every epoch, and "
            f"predicting and scoring the test set (a record reused from an earlier build costs nothing now). "
            f"Training ran at {summary['train_docs_per_s']:.1f} training abstracts per second"
            f"{' on average' if n > 1 else ''}{spread}, "
            f"{summary['train_docs']} abstracts for {summary['epochs']} epochs per run. The peak memory column is "
            f"the largest resident set size of the process so far on a CPU (process-wide, so later seeds report "
            f"at least the earlier seeds' peak), and the largest allocation of the run on a GPU.\n\n"
            f"With spans of at most {max_span_width} words, {reach['too_wide']} of the {reach['entities']} gold "
            f"entities of the official test set ({share:.1f} %) cannot be predicted at all, nor the "
            f"{reach['relations_touching']} of its {reach['relations']} gold relations that have one of them as "
            f"an argument.")


def scale(summary: Mapping[str, Any], cfg: Any, model: str, layers: int, gpu_cfg: Any,
          gpu_seeds: Sequence[int]) -> str:
    """How far this profile's budget is from the published systems' (the paragraph under their table)."""
    trained = (f"of which {cfg.train_layers} layers are trained" if cfg.train_layers is not None
               else "trained in full")
    per_run = _minutes(summary["wall_per_run_s"]) if summary["runs"] else "no time yet"
    return (f"A {layers}-layer `{model}` {trained} for {cfg.epochs} epochs ({per_run} per seed here, on this "
            f"profile) is far from that budget. Read its numbers as a check that the pipeline learns all three "
            f"tasks end to end, not as a measurement of the encoder: NER comes closest, relations suffer most, "
            f"because a relation only counts when both of its entities were found first (were entity errors "
            f"independent, an NER F1 of $f$ would leave only about $f^2$ of the gold relations with both arguments "
            f"found). The `gpu` profile trains the whole encoder on the full data for {gpu_cfg.epochs} epochs with "
            f"{len(gpu_seeds)} seeds.")
