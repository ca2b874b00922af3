"""Where one of our pretraining runs came from, read from its records alone (no weights, no torch): the name
runs starting from its model use, and the chain of our own stages and the outside model it continued.

Torch-free, so that the claims and the chapters read a run's lineage without loading the trainer.
"""

from __future__ import annotations

from pathlib import Path

from medibio.models import zoo
from medibio.runs import records as rec


def model_reference(record: rec.RunRecord) -> str:
    """The name runs starting from a pretraining record's model use (``pretrain-run:<its place>``): they are
    planned from the pretraining run's identity, so its records are found where its weights are not."""
    key = record.key
    return zoo.run_reference(f"{key.profile}/{key.model_tag}/{key.variant}/{key.dataset}/{key.config_digest}/"
                             f"seed{key.seed}")


def continued_from(run_id: str, root: Path) -> tuple[str, tuple[int, ...]] | None:
    """What one of our pretraining runs continued from: the model made elsewhere at the start of its chain
    ("" from scratch) and the tokens of our own stages before it (the #1 analog: MiniLM, then the cs stage), so
    a scale never passes a continued model off as one pretrained on our tokens alone; None when the run's
    record is not under ``root`` (then the scale cannot say)."""
    runs = rec.load_records(root, kind="pretrain", legacy=False)
    by_id, by_reference = {r.run_id: r for r in runs}, {model_reference(r): r for r in runs}
    made = by_id.get(run_id)
    if made is None:
        return None
    stages: list[int] = []
    while origin := ((made.details or {}).get("init") or {}).get("from"):
        made = by_reference.get(origin)
        if made is None:
            return str(origin), tuple(reversed(stages))
        stages.append(int((made.details or {}).get("tokens_seen") or 0))
    return "", tuple(reversed(stages))
