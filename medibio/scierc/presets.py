"""The SciERC configuration of a run (:class:`SciercConfig`); each profile's values are ``Profile.scierc`` and
``Profile.scierc_seeds`` in :mod:`medibio.core.profiles`.

How the options map to the literature:

* ``mode="joint"`` is DyGIE++ (Wadden et al. 2019): one encoder, span representations shared by the NER,
  relation and coreference heads, the three losses summed and trained together.
* ``mode="pipeline"`` is PURE (Zhong & Chen 2021): an entity model (here with the coreference head, which
  PURE does not have) trained first, then a separate relation model with its own encoder that is trained on
  gold entities and, at test time, relates the entity model's predicted entities. PURE marks the two
  entities with typed marker tokens in the input; we give the relation head the argument types as learned
  type embeddings instead (no second encoder pass per pair), which keeps the type information PURE found
  important at a fraction of the cost.
* Span candidates are every span of at most ``max_span_width`` words inside a sentence (both use 8);
  ``context`` fills each encoder window with neighbouring sentences (PURE's cross-sentence context; DyGIE++
  encodes the abstract as a whole, which our windows also do whenever it fits in ``max_length``).
* Relation and coreference candidates in training are the gold entities plus the spans the NER head ranks
  highest (``relation_spans_per_word``, ``coref_spans_per_word`` times the words, as DyGIE++'s pruner);
  at evaluation they are the predicted entities, so every relation and coreference score is end-to-end.

The encoder learns at ``learning_rate`` and the task heads at ``head_learning_rate`` (DyGIE++ and PURE both
train their heads with a larger rate than the encoder). ``ner_negatives`` and ``relation_negatives`` sample the
negative spans and pairs of each document as SpERT does (Eberts & Ulges 2020); DyGIE++ and PURE use all of
them, which works with their tens of epochs but not with a few hundred CPU steps. ``train_layers`` freezes all
but the top encoder layers (the cpu profile's economy; the others fine-tune the whole encoder).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from medibio.core import profiles
from medibio.core.errors import InputFormatError, MedibioError
from medibio.core.text import yaml_mapping
from medibio.training.config import FinetuneConfig

# Part of a SciERC run's identity (medibio.scierc.runner): bump it when a change to medibio.scierc.model alters
# what the span model computes for a given configuration, even by rounding, so that records of the old code are
# not taken for the new. Kept here, with the configuration, so that planning runs does not import torch.
SPAN_MODEL = 2

MODES = ("joint", "pipeline")


@dataclass(frozen=True)
class SciercConfig:
    """Every option that can change a SciERC run's result (all of it enters the run's digest)."""

    mode: str = "joint"
    max_span_width: int = 8
    max_length: int = 512  # sub-tokens per encoder window
    context: bool = True
    learning_rate: float = 2e-5
    head_learning_rate: float = 1e-3
    batch_size: int = 4  # documents per optimiser step (x accumulation)
    grad_accum: int = 1
    eval_batch_size: int = 8
    epochs: int = 10
    warmup_ratio: float = 0.1
    weight_decay: float = 0.01
    max_grad_norm: float = 1.0
    head_hidden: int = 150
    width_embedding: int = 20
    type_embedding: int = 20  # pipeline relation model: argument-type embeddings
    dropout: float = 0.3  # inside the heads
    ner_weight: float = 1.0
    ner_null_weight: float = 1.0  # cross-entropy weight of the "no entity" class (< 1: recall early on)
    # SpERT-style negative sampling: at most this many non-entity spans per document enter the NER loss in a
    # step (None: all, as DyGIE++ and PURE). With few optimiser steps the ~60:1 imbalance of all spans
    # otherwise drives every span to "no entity" before the types are learned.
    ner_negatives: int | None = None
    # The same for relation candidates: at most this many unrelated pairs per document enter the relation loss
    # in a step (None: all). A document has ~2,000 candidate pairs for ~5 relations.
    relation_negatives: int | None = None
    relation_weight: float = 1.0
    coref_weight: float = 1.0
    relation_spans_per_word: float = 0.4
    coref_spans_per_word: float = 0.3
    max_antecedents: int = 50
    # Only the top ``train_layers`` encoder layers learn (embeddings and the layers below stay as pretrained;
    # None: all, as DyGIE++ and PURE). On a CPU this cuts the backward pass to those layers.
    train_layers: int | None = None
    # With ``train_layers``: the frozen embeddings and lower layers run once per document window in eval mode
    # (no dropout) and every step starts from their kept output (medibio.models.split); False runs them at
    # every step, with dropout.
    reuse_frozen_layers: bool = True
    max_train_docs: int | None = None  # a seeded random subset of the training documents
    max_dev_docs: int | None = None  # dev subset for model selection (noted in the record)
    max_test_docs: int | None = None  # only the smoke profile caps test: scores then are NOT official
    mixed_precision: str = "bf16"  # GPU autocast; CPU stays fp32 unless it computes bf16 natively
    # Windows are padded to a multiple of this many sub-tokens (model.collate: fewer distinct shapes)
    pad_to_multiple_of: int = 16

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise MedibioError(f"SciERC mode must be one of {', '.join(MODES)}, not {self.mode!r}")
        if self.max_span_width < 1 or self.max_length < 16:
            raise MedibioError("SciERC max_span_width must be >= 1 and max_length >= 16")
        if self.pad_to_multiple_of < 1:
            raise MedibioError(f"SciERC pad_to_multiple_of must be >= 1, not {self.pad_to_multiple_of}")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def reuses_frozen_layers(self, layers: int) -> bool:
        """Whether an encoder of ``layers`` layers runs its frozen part once per window: some layers learn and
        some below them do not (``train_layers``), and ``reuse_frozen_layers`` is on."""
        return self.reuse_frozen_layers and self.train_layers is not None and 0 < self.train_layers < layers

    def replace(self, **changes: Any) -> SciercConfig:
        unknown = sorted(set(changes) - set(field_names()))
        if unknown:
            raise MedibioError(f"unknown SciERC option(s) {unknown}; valid: {', '.join(field_names())}")
        return dataclasses.replace(self, **changes)

    def finetune_config(self) -> Any:
        """The fields the shared training loop reads, as a :class:`~medibio.training.config.FinetuneConfig`."""
        return FinetuneConfig(learning_rate=self.learning_rate, batch_size=self.batch_size, grad_accum=self.grad_accum,
                              epochs=self.epochs, max_length=self.max_length, warmup_ratio=self.warmup_ratio,
                              weight_decay=self.weight_decay, max_grad_norm=self.max_grad_norm,
                              eval_batch_size=self.eval_batch_size, mixed_precision=self.mixed_precision)


def field_names() -> list[str]:
    return [f.name for f in dataclasses.fields(SciercConfig)]


def load_config_file(path: str | Path) -> dict[str, Any]:
    """``medibio scierc train --config``: a YAML mapping of :class:`SciercConfig` fields (errors name the file)."""
    values, lines = yaml_mapping(path, "SciERC options")
    unknown = [str(k) for k in values if str(k) not in field_names()]
    if unknown:
        raise InputFormatError(path, lines.get((unknown[0],)), f"SciERC options ({', '.join(field_names())})",
                               ", ".join(unknown))
    return values


def seeds(profile: str | profiles.Profile) -> tuple[int, ...]:
    """The profile's SciERC seeds (``Profile.scierc_seeds``, else the profile's seeds)."""
    prof = profiles.get(profile)
    return tuple(prof.scierc_seeds or prof.seeds)


def preset(profile: str | profiles.Profile, overrides: Mapping[str, Any] | None = None) -> SciercConfig:
    """The profile's SciERC configuration (the defaults here, then ``Profile.scierc`` in
    :mod:`medibio.core.profiles`, then overrides); a profile ``limit`` (``--limit``) caps every split."""
    prof = profiles.get(profile)
    values = {**prof.scierc, **{k: v for k, v in (overrides or {}).items() if v is not None}}
    cfg = SciercConfig().replace(**values)
    if prof.limit is not None:
        cfg = cfg.replace(max_train_docs=prof.cap(cfg.max_train_docs), max_dev_docs=prof.cap(cfg.max_dev_docs),
                          max_test_docs=prof.cap(cfg.max_test_docs))
    return cfg
