"""Every run record under a results root, and whether the request behind it would still get it today.

A record is *current* when planning its request again (same dataset, model, profile, seed, overrides, chain)
gives the same configuration digest; *stale* when a preset, the model's weights or tokenizer, or the data
changed since (the record then names what changed); *legacy* when it was written before run identities.
*Unknown* when its request cannot be planned here (a model folder or hub model that is not on this machine,
a dataset this version does not know): the record may be stale, and nothing can say it is current.
Stale records are never reused and never overwritten — a new request runs into its own record — and
``medibio results list --stale`` shows them, with legacy and unknown ones and the reason for each, so that a
user can delete or keep them knowingly.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pandas as pd

from medibio.baselines.frozen import FrozenKind
from medibio.core.settings import Settings
from medibio.finetune.runner import FinetuneKind
from medibio.ift.stages import StageKind
from medibio.pretrain.trainer import PretrainKind
from medibio.runs import protocol
from medibio.runs.identity import config_differences
from medibio.runs.protocol import Kind
from medibio.runs.records import KINDS, RunRecord, load_records
from medibio.scierc.runner import SciercKind

# every kind of run, by the name its records carry: how its request is planned again
PLANNERS: dict[str, Kind] = {kind.name: kind for kind in (FinetuneKind(), FrozenKind(), SciercKind(), StageKind(),
                                                           PretrainKind())}
assert set(PLANNERS) == set(KINDS)


def freshness(record: RunRecord, settings: Settings | None = None) -> tuple[str, str]:
    """``("current" | "stale" | "legacy" | "unknown", what changed or why unknown)``."""
    if record.legacy:
        return "legacy", f"{record.schema or 'no configuration digest'}: an earlier record schema, never reused"
    planner = PLANNERS.get(record.kind)
    if planner is None:
        return "unknown", f"no planner for records of kind {record.kind!r}"
    try:
        plan = planner.replan(record.request, settings or Settings())
    except Exception as exc:  # a model or dataset that cannot be resolved here
        return "unknown", f"cannot plan its request here: {type(exc).__name__}: {exc}"
    if plan.key.config_digest == record.config_digest:
        return "current", ""
    if (note := protocol.machine_difference(plan, record.config or {})) is not None:
        return "current", note  # the same request; only the precision this CPU decides differs
    changes = config_differences(record.config, plan.payload)
    return "stale", "; ".join(changes) or f"digest {record.config_digest} → {plan.key.config_digest}"


# What ``--stale`` shows: every record that is not known to be current (an unknown record is not hidden:
# it may be stale, and its row says why it could not be checked).
NOT_CURRENT = ("stale", "legacy", "unknown")

COLUMNS = ("kind", "profile", "model", "variant", "dataset", "seed", "digest", "status", "score_test", "freshness",
           "changed", "commit", "created", "path")


def list_records(results_root: str | Path, settings: Settings | None = None, stale_only: bool = False,
                 kinds: tuple[str, ...] | None = None, **filters: Any) -> pd.DataFrame:
    """One row per record under ``results_root`` (every kind by default), with its freshness judged under
    ``settings`` (its data root and caches); ``stale_only`` keeps the records not known to be current
    (:data:`NOT_CURRENT`: stale, legacy, unknown). ``filters`` are those of
    :func:`medibio.runs.records.load_records`."""
    root = Path(results_root)
    settings = dataclasses.replace(settings or Settings(), results_root=root)
    rows = []
    for kind in kinds or KINDS:
        for rec in load_records(root, kind=kind, **filters):
            state, changed = freshness(rec, settings)
            if stale_only and state not in NOT_CURRENT:
                continue
            rows.append({"kind": rec.kind, "profile": rec.profile, "model": rec.model_tag, "variant": rec.variant,
                         "dataset": rec.dataset, "seed": rec.seed, "digest": rec.config_digest or "legacy",
                         "status": rec.status, "score_test": rec.score_test, "freshness": state,
                         "changed": changed, "commit": (rec.git_commit or "")[:8], "created": rec.created,
                         "path": str(rec.path(root))})
    return pd.DataFrame(rows, columns=list(COLUMNS))
