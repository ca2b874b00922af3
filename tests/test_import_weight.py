"""A chapter built from recorded runs plans them and reads their records; it trains nothing, so the modules it
imports do not import torch (about two seconds a chapter, six chapters a build): torch comes with the code that
builds and trains a model."""

from __future__ import annotations

import subprocess
import sys

PLANNING = ("medibio.pretrain.trainer", "medibio.finetune.runner", "medibio.scierc.runner",
            "medibio.experiments.ift_runs", "medibio.results.scierc", "medibio.book.appendix",
            "medibio.book.study", "medibio.book.verdicts", "medibio.book.runpages",
            "medibio.book.notebook")  # what every chapter's kernel imports first, and the estimate times


def test_the_modules_that_plan_and_report_runs_do_not_import_torch() -> None:
    code = f"import sys\nfor name in {PLANNING!r}:\n    __import__(name)\nprint('torch' in sys.modules)"
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert shown.split() == ["False"]


def test_the_span_model_version_is_the_runs_identity_and_the_models() -> None:
    from medibio.scierc import model, presets, runner

    assert runner.SPAN_MODEL is presets.SPAN_MODEL is model.SPAN_MODEL
