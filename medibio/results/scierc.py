"""SciERC tables from run records: mean ± std over seeds per task, and the error breakdown (per entity type,
per relation type) recomputed from the runs' test predictions."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from medibio.runs import records as rec
from medibio.scierc.runner import KIND
from medibio.tasks import scierc, scierc_metrics, scierc_predictions

TASKS = {"NER": "ner", "REL": "rel", "REL+": "relplus", "Coref": "coref"}


def load(results_root: str | Path, profile: str | None = None) -> list[Any]:
    """Every SciERC record under a results root (optionally of one profile)."""
    return rec.load_records(results_root, profile=profile, kind=KIND, legacy=False)


def scierc_table(results: str | Path | Sequence[Any], profile: str | None = None) -> pd.DataFrame:
    """One row per (model, mode, digest) and task: test P / R / F1 means, F1 std, seeds."""
    records = load(results, profile) if isinstance(results, (str, Path)) else list(results)
    rows = []
    groups: dict[tuple[str, str, str], list[Any]] = {}
    for r in records:
        if r.ok:
            groups.setdefault((r.model_tag, r.variant, r.config_digest), []).append(r)
    for (model, mode, digest), recs in groups.items():
        for task, short in TASKS.items():
            f1 = pd.Series([r.test[f"{short}_f1"] for r in recs], dtype=float)
            rows.append({"model": model, "mode": mode, "task": task,
                         "P": pd.Series([r.test[f"{short}_p"] for r in recs]).mean(),
                         "R": pd.Series([r.test[f"{short}_r"] for r in recs]).mean(),
                         "F1": f1.mean(), "± (sd)": f1.std(ddof=1) if len(f1) > 1 else float("nan"),
                         "seeds": len(recs), "digest": digest})
    return pd.DataFrame(rows, columns=["model", "mode", "task", "P", "R", "F1", "± (sd)", "seeds", "digest"])


def breakdown(records: Sequence[Any], results_root: str | Path, data_root: str | Path | None = None
              ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per entity type NER F1 and per relation type REL F1 (mean ± sd over the runs, gold counts)."""
    gold = scierc.load_split("test", data_root)
    ner_rows, rel_rows = [], []
    for r in records:
        path = r.predictions_file(results_root)
        if not r.ok or path is None or not path.is_file():
            continue
        docs, preds = scierc_predictions.read(path, gold, partial=True)  # a capped test set predicts a subset
        g_ent = [d.all_entities() for d in docs]
        p_ent = [[tuple(e) for e in p["entities"]] for p in preds]
        for t, s in scierc_metrics.ner_by_type(g_ent, p_ent).items():
            ner_rows.append({"type": t, "seed": r.seed, "F1": s["f1"], "gold": s["gold"]})
        per_rel = scierc_metrics.relation_scores([d.all_relations() for d in docs], g_ent,
                                          [[tuple(x) for x in p["relations"]] for p in preds], p_ent, by_type=True)
        for t, s in per_rel.items():
            rel_rows.append({"type": t, "seed": r.seed, "F1": s["f1"], "gold": s["gold"]})

    def summarise(rows: list[dict[str, Any]]) -> pd.DataFrame:
        if not rows:
            return pd.DataFrame(columns=["F1", "± (sd)", "gold"])
        frame = pd.DataFrame(rows).groupby("type")
        out = pd.DataFrame({"F1": frame["F1"].mean(), "± (sd)": frame["F1"].std(ddof=1), "gold": frame["gold"].max()})
        return out.sort_values("gold", ascending=False)

    return summarise(ner_rows), summarise(rel_rows)


def unreachable(docs: Sequence[Any], max_span_width: int) -> dict[str, int]:
    """Gold entities wider than ``max_span_width`` words (no candidate span covers them) and the gold relations
    with such an argument: what no model with that width can find."""
    wide = {(d.doc_key, s, e) for d in docs for s, e, _ in d.all_entities() if e - s + 1 > max_span_width}
    relations = [(d.doc_key, r) for d in docs for r in d.all_relations()]
    touching = sum((k, r[0], r[1]) in wide or (k, r[2], r[3]) in wide for k, r in relations)
    return {"entities": sum(len(d.all_entities()) for d in docs), "too_wide": len(wide),
            "relations": len(relations), "relations_touching": touching}


def runs_summary(records: Sequence[Any]) -> dict[str, Any]:
    """What the records say about the cost of the chapter's runs (wall time covers data preparation, model
    loading, training, dev evaluation and test prediction; see :class:`medibio.scierc.runner.SciercKind`)."""
    ok = [r for r in records if r.ok]
    walls = pd.Series([r.wall_time_s for r in ok], dtype=float)
    speed = pd.Series([r.train_examples_per_s for r in ok], dtype=float)
    return {"runs": len(ok), "wall_total_s": float(walls.sum()), "wall_per_run_s": float(walls.mean()),
            "train_docs_per_s": float(speed.mean()), "train_docs_per_s_min": float(speed.min()),
            "train_docs_per_s_max": float(speed.max()),
            "train_docs": int(ok[0].train_examples) if ok else 0,
            "epochs": int(ok[0].hyperparameters.get("epochs", 0)) if ok else 0,
            "peak_memory_mb": float(max((r.peak_memory_mb for r in ok), default=0.0)),
            "device": ok[0].device if ok else ""}

