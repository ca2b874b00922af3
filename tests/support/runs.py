"""A kind of run for tests of the run protocol: it trains nothing and records what ``note`` returns."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from medibio.runs import protocol

MODEL = {"name": "m", "path": "/m", "tag": "m", "hash": "sha256:0", "model_type": "bert", "parameters": 1}


class NotingKind:
    """A fine-tuning kind whose training calls ``note()`` and records its result under ``details``."""

    name = "finetune"

    def __init__(self, note: Callable[[], dict[str, Any]]) -> None:
        self.note = note

    def replan(self, request, settings):  # pragma: no cover - never replanned here
        raise NotImplementedError

    def describe(self, record) -> str:
        return "noted"

    def train(self, plan, ctx) -> protocol.Outcome:
        return protocol.Outcome(ctx.record(model=MODEL, score_test=1.0, details=self.note()))
