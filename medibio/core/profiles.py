"""The run profiles — ``smoke``, ``cpu``, ``gpu``, ``paper`` — and everything each one decides, defined once.

A profile says where a run happens and how much of the data and compute it may use: the encoder, the seeds,
the fine-tuning budget of every BLURB dataset, the pretraining configuration, what the book's chapters run
and the SciERC budget. The fine-tuning presets (:mod:`medibio.training.config`), pretraining
(:mod:`medibio.pretrain.configs`), the book's chapters and every ``--profile`` option read these objects;
nothing else names a profile's numbers.

Fine-tuning values follow the BLURB paper's search space (learning rate {1e-5, 3e-5, 5e-5}, batch {16, 32},
epochs 2-60, warm-up 10 %, dropout 0.1); the ``cpu`` profile departs from it where a few hundred optimiser
steps on 2 cores demand it, and says why next to each value.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from medibio.core.errors import UnknownNameError


@dataclass(frozen=True)
class BookPlan:
    """What the book's chapters run under a profile (a notebook parameter left at ``None`` takes these)."""

    tasks: tuple[str, ...] = ("all",)  # BLURB datasets of the Tables 5-6 chapter
    ift_tasks: tuple[str, ...] = ("STS-B", "SICK")  # intermediate tasks tried before BIOSSES
    stilt_tasks: tuple[str, ...] = ("BIOSSES", "BioASQ")  # tasks of the STILT transfer matrix
    stilt_seeds: tuple[int, ...] | None = (1,)  # None: the profile's seeds
    table5_experiments: bool = False  # pretrain the five Table 5 experiments and fine-tune each
    # compute the frozen-encoder baselines in a one-thread background process while the chapters run, the
    # chapters giving it a core (medibio.book.background, medibio.book.cores)
    background_frozen: bool = False
    # after the baselines, the background process trains the fine-tuning chapter's runs from the last one
    # backwards while the chapter trains them from the first (one thread each; the 2-core cpu profile)
    background_finetune: bool = False


@dataclass(frozen=True)
class Profile:
    """Everything one kind of run decides: model, seeds, budgets, pretraining config, book plan."""

    name: str
    model: str  # the encoder fine-tuned when none is named (a medibio.models.zoo name or a hub id)
    description: str
    hardware: str
    seeds: tuple[int, ...]
    small_task_seeds: tuple[int, ...]  # BIOSSES, PubMedQA, BioASQ vary most between seeds
    pretrain_config: str  # a name in medibio.pretrain.configs.CONFIGS
    finetune_base: Mapping[str, Any] = field(default_factory=dict)  # FinetuneConfig fields for every task
    finetune_per_task: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # dataset -> fields
    book: BookPlan = field(default_factory=BookPlan)
    scierc: Mapping[str, Any] = field(default_factory=dict)  # medibio.scierc.presets.SciercConfig fields
    scierc_seeds: tuple[int, ...] | None = None  # SciERC runs (None: ``seeds``)
    # At most this many examples per split (and pretraining steps): the profile's whole code path — presets,
    # seeds, batches, precision, evaluation, records — on a few examples, to check it runs (``--limit``).
    limit: int | None = None

    def default_seeds(self, dataset: str) -> tuple[int, ...]:
        return self.small_task_seeds if dataset in SMALL_TASKS else self.seeds

    def limited(self, limit: int | None) -> Profile:
        """This profile with at most ``limit`` examples per split (``None``: as it is)."""
        return self if limit is None or limit == self.limit else dataclasses.replace(self, limit=limit)

    def cap(self, value: int | None) -> int | None:
        """A size cap of this profile under its limit (``None`` = uncapped)."""
        if self.limit is None:
            return value
        return self.limit if value is None else min(value, self.limit)


SMALL_TASKS = ("BIOSSES", "PubMedQA", "BioASQ")

# Task-level hyperparameters (GPU/paper profiles), inside the BLURB search space. The BLURB paper does not
# print one setting per dataset; these follow its ranges with more epochs for the small sets.
TASK_HYPERPARAMETERS: dict[str, dict[str, Any]] = {
    "BC5-chem": {"learning_rate": 5e-5, "batch_size": 32, "epochs": 20},
    "BC5-disease": {"learning_rate": 5e-5, "batch_size": 32, "epochs": 20},
    "NCBI-disease": {"learning_rate": 5e-5, "batch_size": 32, "epochs": 20},
    "BC2GM": {"learning_rate": 5e-5, "batch_size": 32, "epochs": 20},
    "JNLPBA": {"learning_rate": 5e-5, "batch_size": 32, "epochs": 10},
    "EBM-PICO": {"learning_rate": 5e-5, "batch_size": 32, "epochs": 10},
    "ChemProt": {"learning_rate": 3e-5, "batch_size": 32, "epochs": 10},
    "DDI": {"learning_rate": 3e-5, "batch_size": 32, "epochs": 10},
    "GAD": {"learning_rate": 3e-5, "batch_size": 32, "epochs": 10},
    "BIOSSES": {"learning_rate": 3e-5, "batch_size": 16, "epochs": 30},
    "HoC": {"learning_rate": 5e-5, "batch_size": 16, "epochs": 20},
    "PubMedQA": {"learning_rate": 3e-5, "batch_size": 16, "epochs": 30},
    "BioASQ": {"learning_rate": 3e-5, "batch_size": 16, "epochs": 30},
}

# CPU budget: MiniLM (6 layers, 384 hidden) on 2 cores, bf16 autocast where the CPU has it. Caps size the
# training so that all 13 datasets (one seed each, three for the small sets) fit the book's time budget on a
# quiet machine *including* evaluation on the full official test sets. The measurements behind each value
# below (rates, scores, dates, machines) are in docs/benchmarks-log.md.
# Token tasks: sentences are short, so dynamic padding makes them cheap; ChemProt/DDI/GAD sentences fit in
# 128 sub-tokens (few are cut); the QA contexts and HoC abstracts are cut to 128 sub-tokens, since longer ones
# cost more time without raising the test score.
# RE and QA use a class-balanced loss: without it the heads settle on the majority class within this budget.
# GAD is nearly balanced and keeps the plain loss.
CPU_PER_TASK: dict[str, dict[str, Any]] = {
    "BC5-chem": {"max_train_examples": 800, "epochs": 2, "max_dev_examples": 1000},
    "BC5-disease": {"max_train_examples": 800, "epochs": 2, "max_dev_examples": 1000},
    "NCBI-disease": {"max_train_examples": 800, "epochs": 2, "max_dev_examples": 1000},
    "BC2GM": {"max_train_examples": 800, "epochs": 2, "max_dev_examples": 1000},
    "JNLPBA": {"max_train_examples": 800, "epochs": 2, "max_dev_examples": 1000},
    "EBM-PICO": {"max_train_examples": 800, "epochs": 2, "max_dev_examples": 1000},
    # ChemProt/DDI: mean pooling (the pooling MiniLM was trained with, not the [CLS] pooler it inherited) and the
    # head at 100x the encoder's rate, since on [CLS] with one rate DDI stayed under the frozen encoder's probe
    # (docs/benchmarks-log.md).
    "ChemProt": {"max_train_examples": 2000, "epochs": 2, "max_dev_examples": 1000, "max_length": 128,
                 "class_weighting": "balanced", "pooling": "mean", "head_lr_scale": 100.0},
    "DDI": {"max_train_examples": 2000, "epochs": 2, "max_dev_examples": 1000, "max_length": 128,
            "class_weighting": "balanced", "pooling": "mean", "head_lr_scale": 100.0},
    "GAD": {"max_train_examples": 2000, "epochs": 2, "max_length": 128},
    # BIOSSES: MiniLM is a sentence-embedding model (mean pooling, cosine objective), so its frozen cosine is
    # already a strong similarity model that a fresh cross-encoder head on 64 pairs stays far below; the
    # bi-encoder cosine head (modeling.POOLINGS) starts at the frozen cosine and fine-tunes from there, and 5
    # epochs score as 10 did in half the time (docs/benchmarks-log.md).
    "BIOSSES": {"pooling": "cosine", "learning_rate": 2e-5, "head_lr_scale": 100.0, "epochs": 5},
    # HoC: with this budget MiniLM's sigmoids stay under 0.5, so the trainer picks the multi-label decision
    # threshold on dev (features.MULTILABEL_THRESHOLDS). At one rate the new head never left the label
    # frequencies, so it learns at 2e-2 (lr 4e-5 x head_lr_scale 500) on mean-pooled embeddings, the pooling
    # MiniLM was trained with (the rates tried: docs/benchmarks-log.md).
    "HoC": {"max_train_examples": 600, "epochs": 3, "max_length": 128, "learning_rate": 4e-5,
            "head_lr_scale": 500.0, "pooling": "mean"},
    # QA: the whole training sets, since fewer questions barely moved the loss. BioASQ: 2 epochs, a third less
    # time at the same dev mean; PubMedQA keeps 3, since with 2 a seed stayed on one class (docs/benchmarks-log.md).
    "PubMedQA": {"epochs": 3, "max_length": 128, "class_weighting": "balanced"},
    "BioASQ": {"epochs": 2, "max_length": 128, "class_weighting": "balanced"},
}

# Intermediate tasks (STS-B, SICK, ...): regression/classification on sentence pairs.
INTERMEDIATE_HYPERPARAMETERS: dict[str, Any] = {"learning_rate": 3e-5, "batch_size": 32, "epochs": 3,
                                                "max_length": 128}

PROFILES: dict[str, Profile] = {
    "smoke": Profile(
        name="smoke", model="tiny-deberta", hardware="any CPU, minutes",
        description="tests: tiny random DeBERTa, 32 examples per split, 2 epochs; scores are meaningless",
        seeds=(1,), small_task_seeds=(1,), pretrain_config="smoke",
        finetune_base={"max_train_examples": 32, "max_dev_examples": 32, "max_test_examples": 32, "epochs": 2,
                       "batch_size": 8, "eval_batch_size": 16, "max_length": 64, "learning_rate": 5e-4,
                       "intermediate_max_train_examples": 32, "intermediate_epochs": 1},
        book=BookPlan(tasks=("BIOSSES",)),
        # SciERC: the tiny random model on a few documents (seconds; scores meaningless)
        scierc={"max_train_docs": 8, "max_dev_docs": 4, "max_test_docs": 4, "epochs": 2, "batch_size": 4,
                "max_length": 128, "learning_rate": 5e-4, "head_learning_rate": 5e-3, "max_span_width": 4,
                "head_hidden": 32, "mixed_precision": "no"},
    ),
    "cpu": Profile(
        name="cpu", model="minilm", hardware="2 CPU cores",
        description="MiniLM on this CPU: capped training, subsampled dev, full official test sets",
        seeds=(1,), small_task_seeds=(1, 2, 3), pretrain_config="mini",
        # lr 1e-4 (above the BLURB grid): with a few hundred steps MiniLM needs the larger step (measured on
        # NCBI-disease and BIOSSES: docs/benchmarks-log.md).
        # One intermediate model per IFT chain (stage seed 1), fine-tuned on the target with seeds 1-3: two
        # stage trainings fewer per chain; the spread over seeds is then the target stage's.
        finetune_base={"batch_size": 16, "learning_rate": 1e-4, "eval_batch_size": 64, "mixed_precision": "bf16",
                       "intermediate_max_train_examples": 2000, "intermediate_epochs": 1, "intermediate_seed": 1},
        finetune_per_task=CPU_PER_TASK,
        # SciERC: MiniLM, the encoder under bf16 autocast where the CPU has it (span heads in fp32:
        # scierc.model.heads_in_fp32), sized so that the chapter's three seeds fit in 12 minutes including
        # evaluation on the full official test set. Only MiniLM's top two layers learn (train_layers=2):
        # backpropagation then stops there, which buys most of the training abstracts and five epochs in that
        # time, and scores far above fewer abstracts fully fine-tuned. Negative relation pairs are sampled,
        # since without them the relation head stays at "no relation". The four frozen layers run once per
        # abstract window, without dropout (SciercConfig.reuse_frozen_layers), which saves time again. The
        # measurements: docs/benchmarks-log.md.
        scierc={"max_train_docs": 300, "max_dev_docs": 20, "epochs": 5, "batch_size": 2, "max_length": 256,
                "learning_rate": 1e-4, "head_learning_rate": 5e-3, "max_span_width": 6,
                "ner_negatives": 100, "relation_negatives": 50, "train_layers": 2},
        scierc_seeds=(1, 2, 3),  # the paper reports five runs; this CPU affords three
        book=BookPlan(background_frozen=True, background_finetune=True),
    ),
    "gpu": Profile(
        name="gpu", model="microsoft/deberta-v3-base", hardware="one GPU",
        description="one GPU: full data, BLURB-style epochs, bf16, 5 seeds",
        seeds=(1, 2, 3, 4, 5), small_task_seeds=(1, 2, 3, 4, 5), pretrain_config="gpu-mini",
        finetune_base={"mixed_precision": "bf16", "eval_batch_size": 128},
        finetune_per_task=TASK_HYPERPARAMETERS,
        book=BookPlan(stilt_tasks=("BIOSSES", "BioASQ", "PubMedQA", "GAD", "HoC"), stilt_seeds=(1, 2, 3),
                      table5_experiments=True, background_frozen=True),
        # SciERC: the full data, all layers, DyGIE++-like epochs
        scierc={"epochs": 20, "batch_size": 8, "learning_rate": 2e-5, "head_learning_rate": 5e-4},
    ),
    "paper": Profile(
        name="paper", model="KISTI-AI/Scideberta-full", hardware="several GPUs / nodes",
        description="the paper's setting on several GPUs: full data, BLURB epochs, 5 seeds (10 for the small "
                    "sets, as in BLURB)",
        seeds=(1, 2, 3, 4, 5), small_task_seeds=tuple(range(1, 11)), pretrain_config="medibiodeberta",
        finetune_base={"mixed_precision": "bf16", "eval_batch_size": 128},
        finetune_per_task=TASK_HYPERPARAMETERS,
        book=BookPlan(stilt_tasks=("BIOSSES", "BioASQ", "PubMedQA", "GAD", "HoC"), stilt_seeds=None,
                      table5_experiments=True, background_frozen=True),
        scierc={"epochs": 20, "batch_size": 8, "learning_rate": 2e-5, "head_learning_rate": 5e-4},
    ),
}

# The intermediate fine-tuning claims with power: the cpu profile's MiniLM and budgets, but five seeds
# everywhere, one intermediate stage per seed (intermediate_seed None: a stage takes its target's seed) on the
# whole intermediate training set (one epoch). That is more than the default book can carry (its time:
# docs/benchmarks-log.md), so its runs are made once (docs/verdicts.md lists the commands), recorded in
# reference/, and the cpu claims page reads them from there.
IFT = "cpu-ift"
PROFILES[IFT] = dataclasses.replace(
    PROFILES["cpu"], name=IFT, hardware="2 CPU cores, recorded",
    description="the IFT claims on this CPU: MiniLM, 5 seeds, a full-data intermediate stage per seed",
    seeds=(1, 2, 3, 4, 5), small_task_seeds=(1, 2, 3, 4, 5),
    finetune_base={**PROFILES["cpu"].finetune_base, "intermediate_max_train_examples": None,
                   "intermediate_seed": None},
    book=BookPlan(), scierc_seeds=None)

# The Table 5 study on this CPU (medibio.experiments.table5): the cpu profile's fine-tuning budgets, the
# study's pretraining configuration (records filed under "study"), three fine-tuning seeds per pretrained
# model. Its runs take hours, so they run outside the book, in resumable units; the default book is unchanged.
STUDY = "cpu-study"
PROFILES[STUDY] = dataclasses.replace(
    PROFILES["cpu"], name=STUDY, hardware="2 CPU cores, recorded",
    description="the Table 5 study on this CPU: 4 x 256 models pretrained on SumPubMed, 3 fine-tuning seeds each",
    seeds=(1, 2, 3), small_task_seeds=(1, 2, 3), pretrain_config="study", book=BookPlan(), scierc_seeds=None)

DEFAULT_PROFILE = "cpu"


def names() -> list[str]:
    """The profile names, cheapest first (``smoke``, ``cpu``, ``gpu``, ``paper``)."""
    return list(PROFILES)


def filed_under(profile: str, kind: str) -> str:
    """The profile name a kind's run records are filed under: a pretraining run under the profile's pretraining
    configuration (``mini`` for ``cpu``), which profiles may share; every other kind under the profile."""
    return get(profile).pretrain_config if kind == "pretrain" else profile


def get(profile: str | Profile) -> Profile:
    """A profile by name (a :class:`Profile` passes through); unknown names list the known ones. A session's
    ``--limit`` is applied by :meth:`medibio.core.settings.Settings.profile`."""
    if isinstance(profile, Profile):
        return profile
    try:
        return PROFILES[str(profile)]
    except KeyError:
        raise UnknownNameError("profile", profile, PROFILES) from None


def help_text() -> str:
    """The ``--profile`` help of every command, generated from the profiles themselves."""
    return "run profile: " + "; ".join(f"{p.name} ({p.hardware})" for p in PROFILES.values())


def table() -> Any:
    """The profiles side by side (for the book's first page and ``medibio presets``)."""
    import pandas as pd

    rows = [{"profile": p.name, "hardware": p.hardware, "fine-tuned model": p.model,
             "seeds (small sets)": f"{len(p.seeds)} ({len(p.small_task_seeds)})",
             "pretraining config": p.pretrain_config, "what it is for": p.description} for p in PROFILES.values()]
    return pd.DataFrame(rows).set_index("profile")


def parse_seeds(seeds: int | str | Sequence[int] | None) -> list[int] | None:
    """Seeds as given on a command line or in a notebook (``3``, ``"1,2,3"``, ``[1, 2]``); None: the profile's."""
    if seeds is None:
        return None
    if isinstance(seeds, int):
        return [seeds]
    if isinstance(seeds, str):
        return [int(s) for s in seeds.split(",") if s.strip()]
    return [int(s) for s in seeds]
