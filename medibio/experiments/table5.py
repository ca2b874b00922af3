"""Paper Table 5 as an experiment: its arms at two scales, their budgets, the study's queues and its pilot's gate.

The paper (Table 5; corpus = medicine-related S2ORC subset) pretrains five configurations: #1 continual from
SciDeBERTa v2 on abstracts (90K steps, BLURB 78.03); #2 continual from DeBERTa-v3 base on abstracts (100K,
76.65); #3 from scratch on abstracts (125K, 77.38); #4 from scratch on full text (125K, 76.46); #5 #4 continued
on abstracts (50K, 76.38). Here SciDeBERTa v2's science pretraining is a *stage* (an arm that another arm
continues, the same seed's run), DeBERTa-v3 is MiniLM (the general-domain model available offline), and S2ORC
is SumPubMed abstracts or full texts. Two scales declare it with the same :class:`Arm` type:

* :data:`SCALED_DOWN` — the five configurations with the pretraining configuration of the build's profile
  (``gpu-mini`` on ``gpu``, ``medibiodeberta`` on ``paper``, ``mini`` elsewhere), each arm's steps the
  config's ``max_steps`` scaled by the paper's steps / 125K; the science stage is trained from scratch on
  computer-science text. ``medibio pretrain --experiment`` pretrains them, the Tables 5–6 chapter fine-tunes
  them (``table5_experiments``).
* :data:`STUDY` — the study on this CPU (docs/pretraining.md): #0 (random initialisation, the floor) to #4 on
  equal tokens (``TOKENS``; the ``cs`` stage half of them), two pretraining seeds, fine-tuned on the seven large
  BLURB sets under its own profile; trained in resumable units by two queues (``medibio study queue a|b``),
  after a pilot on ``PILOT_TOKENS`` whose gate (:func:`pilot_gate`) is beside the design.

A scale names its runs: :meth:`Scale.tag` is an arm's pretraining runs' tag, :meth:`Scale.variant` its
fine-tuning runs' variant, and :meth:`Scale.arm_of` reads the arm back from a variant. Everything that reads
or makes Table 5's runs asks a scale (:func:`places` for the verdicts), so a sixth arm is declared here only.

This module imports no torch, so that the command line reads the design without loading the trainer.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from medibio.core import profiles
from medibio.core.errors import UnknownNameError
from medibio.experiments.registry import register
from medibio.models.zoo import pretrained_tag
from medibio.pretrain.configs import PretrainConfig, get_config

REFERENCE_STEPS = 125_000  # the paper's longest Table 5 run; a scaled-down config's max_steps stands for it


@dataclass(frozen=True)
class Arm:
    """One row of Table 5 at some scale, or a stage another row continues: what it starts from and reads.

    ``init`` is None (from scratch), another arm's id of the same scale (a stage: that arm's run of the same
    seed) or a model name; ``share`` the part of the scale's budget it trains (a stage half its arm's tokens,
    a scaled-down row the paper's steps over :data:`REFERENCE_STEPS`); ``paper_row`` the paper's configuration
    it stands for (None: a stage, or the study's floor #0, which the paper does not have)."""

    id: str
    init: str | None
    corpus: str
    text: str  # the corpus records' text: ``abstract`` or ``fulltext`` (abstract + body)
    description: str
    paper_row: int | None = None
    pretrained: bool = True
    share: float = 1.0
    algorithm: str = ""  # the paper's: from scratch or continual learning
    paper_base: str = ""  # the paper's base model
    paper_steps: int | None = None
    paper_blurb: float | None = None

    @property
    def configuration(self) -> str | None:
        """The paper's name of the configuration (``#3``), None for a stage or the floor."""
        return None if self.paper_row is None else f"#{self.paper_row}"


class Request(NamedTuple):
    """One step of a study queue: pretrain an arm's run of a seed (in units), or fine-tune its model."""

    step: str  # "pretrain" or "finetune"
    arm: str
    seed: int


@dataclass(frozen=True)
class Scale:
    """Table 5 at one scale: its arms, how its runs are named, and the profile its fine-tuning runs are filed
    under (None: the profile of the build that runs them)."""

    name: str
    description: str
    arms: dict[str, Arm] = field(repr=False)  # declared here alone: whatever reads the scale's runs iterates them
    tag_format: str  # an arm's pretraining runs' tag, from its id
    variant_format: str  # its fine-tuning runs' variant, from its tag
    profile: str | None = None
    seeds: tuple[int, ...] = ()  # pretraining seeds every arm needs (empty: the profile's one)
    queues: Mapping[str, tuple[Request, ...]] = field(default_factory=dict, repr=False)

    def get_arm(self, arm: str) -> Arm:
        """An arm by id (``3`` or ``#3``), with the known ids in the error."""
        try:
            return self.arms[arm.lstrip("#")]
        except KeyError:
            raise UnknownNameError(f"{self.description} arm", arm, self.arms) from None

    def tag(self, arm: Arm | str) -> str:
        """An arm's pretraining runs' tag (their models are named ``<tag>-s<seed>``)."""
        return self.tag_format.format(arm if isinstance(arm, str) else arm.id)

    def variant(self, arm: Arm | str) -> str:
        """The variant of an arm's fine-tuning runs (every pretraining seed's: the model tells them apart)."""
        return self.variant_format.format(self.tag(arm))

    def models(self, arm: Arm | str) -> tuple[str, ...]:
        """How records name the models an arm's pretraining seeds made (``study-3-s1``, ``study-3-s2``)."""
        return tuple(pretrained_tag(self.tag(arm), seed) for seed in self.seeds)

    def arm_of(self, variant: str) -> Arm | None:
        """The arm whose fine-tuning runs (or pretraining runs, by tag) carry ``variant``; None: none of this
        scale's. A study variant at another budget (``study-3-5M``) is the same arm's."""
        for arm in self.arms.values():
            if variant in (self.variant(arm), self.tag(arm)) or variant.startswith(f"{self.variant(arm)}-"):
                return arm
        return None

    def arm_for(self, configuration: str) -> Arm | None:
        """The arm that stands for the paper's configuration ``#N`` at this scale (None: it has none)."""
        return next((a for a in self.arms.values() if a.configuration == configuration), None)

    def stage_of(self, arm: Arm) -> Arm | None:
        """The arm of this scale that ``arm`` continues (its same seed's run), None when it starts elsewhere."""
        return self.arms.get(arm.init) if arm.init is not None else None

    def in_order(self, ids: Sequence[str]) -> list[str]:
        """``ids`` and the stages they continue, each stage before the arm that continues it."""
        ordered: list[str] = []

        def add(arm_id: str) -> None:
            stage = self.stage_of(self.arms[arm_id])
            if stage is not None:
                add(stage.id)
            if arm_id not in ordered:
                ordered.append(arm_id)

        for arm_id in ids:
            add(arm_id)
        return ordered


# --------------------------------------------------------------------------- the five configurations, scaled down

_ROW = "table5-{}"  # a scaled-down configuration's id (and its pretraining runs' tag)
_SCIENCE = "science"


def _row(n: int, *arm: Any, **facts: Any) -> Arm:
    return Arm(_ROW.format(n), *arm, paper_row=n, **facts)


def _scaled(paper_steps: int) -> float:
    return paper_steps / REFERENCE_STEPS


SCALED_DOWN = Scale(
    "table5-scaled-down", "scaled-down Table 5",
    {a.id: a for a in (
        Arm(_SCIENCE, None, "cs", "fulltext", "general-science model: from scratch on CS abstracts and full texts",
            algorithm="from scratch", paper_base="DeBERTa-v2 (SciDeBERTa v2 stand-in)"),
        _row(1, _SCIENCE, "biomed-abstracts", "abstract", "#1: the science model continued on biomedical abstracts",
             share=_scaled(90_000), algorithm="continual learning", paper_base="SciDeBERTa v2", paper_steps=90_000,
             paper_blurb=78.03),
        _row(2, "minilm", "biomed-abstracts", "abstract", "#2: general-domain MiniLM continued on biomedical abstracts",
             share=_scaled(100_000), algorithm="continual learning", paper_base="DeBERTa-v3 base",
             paper_steps=100_000, paper_blurb=76.65),
        _row(3, None, "biomed-abstracts", "abstract", "#3: from scratch on biomedical abstracts",
             share=_scaled(125_000), algorithm="from scratch", paper_base="DeBERTa-v2", paper_steps=125_000,
             paper_blurb=77.38),
        _row(4, None, "biomed-fulltext", "fulltext", "#4: from scratch on biomedical full text",
             share=_scaled(125_000), algorithm="from scratch", paper_base="DeBERTa-v2", paper_steps=125_000,
             paper_blurb=76.46),
        _row(5, _ROW.format(4), "biomed-abstracts", "abstract", "#5: #4 continued on biomedical abstracts",
             share=_scaled(50_000), algorithm="continual learning", paper_base="#4", paper_steps=50_000,
             paper_blurb=76.38),
    )},
    tag_format="{}", variant_format="pretrain-{}")


def scaled_steps(arm: Arm, config: PretrainConfig) -> int:
    """A scaled-down arm's training steps under a pretraining configuration (its share of ``max_steps``)."""
    return max(1, round(config.max_steps * arm.share))


def configurations(scale: Scale = SCALED_DOWN) -> list[str]:
    """The ids of the scale's arms that stand for the paper's configurations, in the paper's order."""
    rows = [a for a in scale.arms.values() if a.paper_row is not None]
    return [a.id for a in sorted(rows, key=lambda a: a.paper_row or 0)]


def resolve_ids(selection: str | Sequence[str], scale: Scale = SCALED_DOWN) -> list[str]:
    """Requested scaled-down arms plus the stages they continue, in a runnable order: ids, row numbers
    (``1,3``) or ``all`` (the five configurations)."""
    items = [selection] if isinstance(selection, str) else list(selection)
    wanted: list[str] = []
    for item in items:
        for part in (p.strip() for p in item.split(",") if p.strip()):
            if part == "all":
                wanted.extend(configurations(scale))
            elif part in scale.arms:
                wanted.append(part)
            elif part.isdigit() and scale.arm_for(f"#{part}") is not None:
                wanted.append(scale.arm_for(f"#{part}").id)
            else:
                raise UnknownNameError("experiment", part, ["all", *scale.arms], " (or a Table 5 row number)")
    return scale.in_order(wanted)


# --------------------------------------------------------------------------- the study on this CPU

CONFIG = "study"
SEEDS = (1, 2)  # pretraining seeds
TOKENS = 10_000_000  # per arm and seed
PILOT_TOKENS = 5_000_000  # the pilot: #3 and #4 against #0
PROFILE = profiles.STUDY  # the profile of the study's fine-tuning runs
# The precision declared for every study run from 2026-12-02 on (docs/pretraining.md): fp32 computes at full speed
# on every CPU type met so far. The `study` configuration still asks for `auto`, which keeps the recorded runs'
# digests; the study's commands switch native bf16 off (medibio.core.settings.CPU_BF16_ENV), so that `auto`
# resolves to fp32 on every CPU and a run made again has the digest of its fp32 record.
PRECISION = "fp32"
GO_MARGIN = 3.0  # the pilot goes on when #3 beats #0 by this many F1 points (mean over its tasks)
PILOT_TASKS = ("BC5-chem", "NCBI-disease", "ChemProt")
PILOT_ARMS = ("0", "3", "4")
CS_STAGE = "cs"  # the study's science stage: MiniLM continued on computer-science text, which #1 continues


# The study after its pilot, as two queues for the two cores (``medibio study queue a`` and ``... b``, side by
# side): each request pretrains (in units, each in a fresh process) or fine-tunes one arm and pretraining seed on
# the seven large BLURB sets. The claims' arms come first: #3 and #4 with both seeds (full text vs abstracts),
# then #2's two seeds side by side (from scratch vs a general model), then the cs stage and #1 (a science stage
# first), one seed per queue; #0 (the floor, no pretraining, a yardstick rather than a claim's arm) comes last.
# Every request is idempotent, so a queue restarted after an interruption (the end of a session stops both)
# goes on where it stopped.
def _queue(first: str, seed: int) -> tuple[Request, ...]:
    """One queue: ``first``'s two seeds, then #2, the cs stage, #1 and #0 with ``seed``."""
    out: list[Request] = []
    for arm, s in ((first, 1), (first, 2), ("2", seed), (CS_STAGE, seed), ("1", seed), ("0", seed)):
        out.append(Request("pretrain", arm, s))
        if arm != CS_STAGE:  # a stage is not fine-tuned: the arm that continues it is
            out.append(Request("finetune", arm, s))
    return tuple(out)


STUDY = Scale(
    "table5-study", "study",
    {a.id: a for a in (
        Arm("0", None, "biomed-abstracts", "abstract", "#0: random initialisation (no pretraining)", pretrained=False),
        Arm("2", "minilm", "biomed-abstracts", "abstract",
            "#2: MiniLM (new MLM head) continued on SumPubMed abstracts", paper_row=2),
        Arm("3", None, "biomed-abstracts", "abstract", "#3: from scratch on SumPubMed abstracts", paper_row=3),
        Arm("4", None, "biomed-fulltext", "fulltext", "#4: from scratch on SumPubMed full texts", paper_row=4),
        Arm(CS_STAGE, "minilm", "cs", "fulltext",
            "#1's first stage: MiniLM (new MLM head) continued on computer-science text", share=0.5),
        Arm("1", CS_STAGE, "biomed-abstracts", "abstract",
            "#1: MiniLM continued on computer-science text, then on SumPubMed abstracts", paper_row=1),
    )},
    tag_format="study-{}", variant_format="{}", profile=PROFILE, seeds=SEEDS,
    queues={"a": _queue("3", 1), "b": _queue("4", 2)})
register(SCALED_DOWN)
register(STUDY)


def steps_for(tokens: int, config: PretrainConfig) -> int:
    """Optimizer steps that see at least ``tokens`` tokens (whole steps of the config's batch)."""
    return math.ceil(tokens / (config.effective_batch * config.seq_length))


def arm_config(arm: Arm, seed: int, tokens: int, config: PretrainConfig | str = CONFIG) -> PretrainConfig:
    """The pretraining configuration of one study arm and seed: its share of ``tokens`` in whole steps (none
    for #0, which is not pretrained)."""
    base = get_config(config) if isinstance(config, str) else config
    steps = steps_for(int(tokens * arm.share), base) if arm.pretrained else 0
    return base.with_overrides(seed=seed, max_steps=steps)


def study_variant(arm: str, tokens: int = TOKENS) -> str:
    """The fine-tuning runs' variant of a study arm: ``study-3`` at the study's budget, ``study-3-5M`` at another
    (the pilot's). Every pretraining seed of an arm shares it; the model (``study-3-s1``) tells them apart."""
    name = STUDY.variant(STUDY.get_arm(arm))
    if tokens == TOKENS:
        return name
    return f"{name}-{tokens // 1_000_000}M" if tokens % 1_000_000 == 0 else f"{name}-{tokens}tokens"


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


# --------------------------------------------------------------------------- where a claim's runs are


class Place(NamedTuple):
    """Where the runs of two arms of one scale may be: their fine-tuning runs' profile and variants, and the
    results root."""

    scale: Scale
    profile: str
    a: str
    b: str
    root: Path


def places(a: str, b: str, profile: str, roots: Sequence[Path], scales: Sequence[Scale] | None = None) -> list[Place]:
    """Where the runs of the paper's configurations ``a`` and ``b`` (``#3``) may be, in the order a claim reads
    them: the scaled-down arms under the build's ``profile`` in the build's results root (``roots[0]``), then the
    study's arms under its profile in each of ``roots`` (the build's, then the recorded ones). A scale without
    an arm for both configurations has no place."""
    found = []
    for scale in scales or (SCALED_DOWN, STUDY):
        arm_a, arm_b = scale.arm_for(a), scale.arm_for(b)
        if arm_a is None or arm_b is None:
            continue
        for root in roots if scale.profile else roots[:1]:
            found.append(Place(scale, scale.profile or profile, scale.variant(arm_a), scale.variant(arm_b), root))
    return found
