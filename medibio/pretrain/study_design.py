"""The CPU Table 5 study's design: its arms, token budgets, seeds, queues and the pilot's go/no-go.

The arms and how they are trained are described in :mod:`medibio.pretrain.study`, which runs them. This module
imports no torch, so that the command line (``medibio study ...``) reads the study's defaults and names without
loading the trainer, and a queue's long-lived parent process never holds it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from medibio.core.errors import UnknownNameError

CONFIG = "study"
SEEDS = (1, 2)  # pretraining seeds
TOKENS = 10_000_000  # per arm and seed
PILOT_TOKENS = 5_000_000  # the pilot: #3 and #4 against #0
PROFILE = "cpu-study"  # the profile (medibio.core.profiles) of the study's fine-tuning runs
# The precision declared for every study run from 2026-12-02 on (docs/pretraining.md): fp32 computes at full speed
# on every CPU type met so far. The `study` configuration still asks for `auto`, which keeps the recorded runs'
# digests; the study's commands switch native bf16 off (medibio.core.precision.CPU_BF16_ENV), so that `auto`
# resolves to fp32 on every CPU and a run made again has the digest of its fp32 record.
PRECISION = "fp32"
GO_MARGIN = 3.0  # the pilot goes on when #3 beats #0 by this many F1 points (mean over its tasks)


CS_STAGE = "cs"  # an arm's init naming the study's own stage: the same seed's run of that arm


@dataclass(frozen=True)
class Arm:
    """One row of the study's Table 5: where it starts, what it reads."""

    id: str
    paper_row: int
    init: str | None  # None: the study's shape from scratch; CS_STAGE: that stage's run of the same seed
    corpus: str
    variant: str
    pretrained: bool = True
    description: str = ""

    @property
    def name(self) -> str:
        """The arm in run identities: its pretraining runs' tag (their models' ``study-3-s1``) and its
        fine-tuning runs' variant (``study-3``)."""
        return f"study-{self.id}"


ARMS: dict[str, Arm] = {a.id: a for a in (
    Arm("0", 0, None, "biomed-abstracts", "abstract", pretrained=False,
        description="#0: random initialisation (no pretraining)"),
    Arm("2", 2, "minilm", "biomed-abstracts", "abstract",
        description="#2: MiniLM (new MLM head) continued on SumPubMed abstracts"),
    Arm("3", 3, None, "biomed-abstracts", "abstract", description="#3: from scratch on SumPubMed abstracts"),
    Arm("4", 4, None, "biomed-fulltext", "fulltext", description="#4: from scratch on SumPubMed full texts"),
    Arm("cs", 1, "minilm", "cs", "fulltext",
        description="#1's first stage: MiniLM (new MLM head) continued on computer-science text"),
    Arm("1", 1, CS_STAGE, "biomed-abstracts", "abstract",
        description="#1: MiniLM continued on computer-science text, then on SumPubMed abstracts"),
)}


def get_arm(arm: str) -> Arm:
    """An arm by id (``3`` or ``#3``), with the known ids in the error."""
    try:
        return ARMS[arm.lstrip("#")]
    except KeyError:
        raise UnknownNameError("study arm", arm, ARMS) from None


# The study after its pilot, as two queues for the two cores (``medibio study queue a`` and ``... b``, side by
# side): each step pretrains (in units, each in a fresh process) or fine-tunes one arm and pretraining seed on the
# seven large BLURB sets. The claims' arms come first: #3 and #4 with both seeds (full text vs abstracts), then
# #2's two seeds side by side (from scratch vs a general model), then the cs stage and #1 (a science stage
# first), one seed per queue; #0 (the floor, no pretraining, a yardstick rather than a claim's arm) comes last.
# Every step is idempotent, so a queue restarted after an interruption (the end of a session stops both) goes on
# where it stopped.
QUEUES: dict[str, tuple[tuple[str, str, int], ...]] = {
    "a": (("pretrain", "3", 1), ("finetune", "3", 1), ("pretrain", "3", 2), ("finetune", "3", 2),
          ("pretrain", "2", 1), ("finetune", "2", 1), ("pretrain", "cs", 1), ("pretrain", "1", 1),
          ("finetune", "1", 1), ("pretrain", "0", 1), ("finetune", "0", 1)),
    "b": (("pretrain", "4", 1), ("finetune", "4", 1), ("pretrain", "4", 2), ("finetune", "4", 2),
          ("pretrain", "2", 2), ("finetune", "2", 2), ("pretrain", "cs", 2), ("pretrain", "1", 2),
          ("finetune", "1", 2), ("pretrain", "0", 2), ("finetune", "0", 2)),
}


def pilot_gate(scores: Mapping[str, Mapping[str, Sequence[float]]], margin: float = GO_MARGIN) -> dict[str, Any]:
    """The pilot's go/no-go from test scores (0-100) by arm and task over fine-tuning seeds: go on when #3
    beats #0 by at least ``margin`` points on the mean over the tasks. Also #4 - #3 (full text against
    abstracts), which the pilot reports but does not gate on."""
    missing = [(a, t) for a in ("0", "3") for t in scores.get("0", {}) if not scores.get(a, {}).get(t)]
    if not scores.get("0") or missing:
        raise ValueError(f"the gate needs #0 and #3 on the same tasks; missing: {missing or 'arm #0'}")

    def mean(values: Sequence[float]) -> float:
        return sum(values) / len(values)

    per_task = {t: mean(scores["3"][t]) - mean(scores["0"][t]) for t in scores["0"]}
    gain = mean(list(per_task.values()))
    fulltext = ({t: mean(scores["4"][t]) - mean(scores["3"][t]) for t in scores["0"] if scores["4"].get(t)}
                if "4" in scores else {})
    return {"scratch_minus_random": per_task, "mean_gain": gain, "margin": margin, "go": gain >= margin,
            "fulltext_minus_abstracts": fulltext}
