"""A kind of run for tests of the run protocol: it trains nothing and records what ``note`` returns."""

from __future__ import annotations

import json
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


def safetensors_of(payload: bytes) -> bytes:
    """A complete safetensors file holding ``payload`` as one uint8 tensor (model weights are checked whole,
    :mod:`medibio.models.weights`, so a test's stand-in weights must be a well-formed file)."""
    header = json.dumps({"w": {"dtype": "U8", "shape": [len(payload)], "data_offsets": [0, len(payload)]}}).encode()
    return len(header).to_bytes(8, "little") + header + payload
