"""The throughput benchmark measures both padding modes with the engine's code and reports sane figures."""

from __future__ import annotations

import pytest

from benchmarks import finetune_engine as benchmark
from medibio.core import precision as accel
from medibio.training import config as presets

pytestmark = pytest.mark.realdata


def test_dynamic_and_fixed_padding_rows(session_settings, data_root):
    rows = benchmark.run(["ChemProt"], model="tiny-deberta", examples=16, profile="smoke", max_length=256, isolate=False,
                         progress=False, settings=session_settings)
    dynamic, fixed = rows
    assert (dynamic["padding"], fixed["padding"]) == ("dynamic+buckets", "max_length")
    assert fixed["padded_tokens_per_example"] == fixed["max_length"] == 256
    # bucketing pads far less than padding every sentence to the maximum length
    assert dynamic["padded_tokens_per_example"] < fixed["padded_tokens_per_example"]
    assert dynamic["padding_share"] < fixed["padding_share"]
    for row in rows:
        assert row["train_examples"] == 16 and row["train_examples_per_s"] > 0 and row["peak_memory_mb"] > 0
        # the preset's epochs, each with its MFU against the peak bracketed around the training
        assert row["epochs"] == presets.preset("ChemProt", "smoke").effective_epochs == len(row["epoch_mfu"])
        assert row["peak_before_tflops"] > 0 and row["peak_after_tflops"] > 0 and row["train_mfu"] > 0
        assert row["matmul_only_s"] > 0 and row["matmul_share"] > 0
    text = benchmark.table(rows)
    lines = [line for line in text.splitlines() if not line.startswith("!")]  # "!": a flagged unsteady peak
    assert "ChemProt" in text and len(lines) == 4 and "x" in lines[2]


def test_child_process_measurement_matches_the_schema(session_settings, data_root, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the child finds `benchmarks` from the repository whatever the caller's cwd
    row = benchmark.measure_in_child(session_settings, task="BIOSSES", model_name="tiny-deberta", examples=8,
                                     profile="smoke", pad_to_max_length=False, max_length=None, fp32=True)
    assert row["task"] == "BIOSSES" and row["precision"] == "fp32" and row["memory_kind"] == "process max RSS"
    with pytest.raises(ValueError, match="unknown padding mode"):
        benchmark.run(["BIOSSES"], modes=["static"])


def test_trainer_comparison_runs_both_engines_on_the_same_data(session_settings, data_root):
    rows = benchmark.compare(["BIOSSES"], model="tiny-deberta", profile="smoke", sizes=(8, 8, 8, 1), seed=1,
                             isolate=False, progress=False, settings=session_settings)
    ours, hf = rows
    assert (ours["engine"], hf["engine"]) == ("medibio", "hf-trainer")
    # both engines take the machine's precision decision for the preset (bf16 on CPUs with native bf16)
    expected = accel.precision_for(requested=presets.preset("BIOSSES", "smoke").mixed_precision)
    for row in rows:
        assert row["task"] == "BIOSSES" and row["train_examples"] == 8 and row["epochs"] == 1
        assert row["train_examples_per_s"] > 0 and row["peak_memory_mb"] > 0 and row["precision"] == expected
        assert row["test_score"] == row["test_score"]  # a number, not NaN
    text = benchmark.compare_table(rows)
    ratio = ours["train_examples_per_s"] / hf["train_examples_per_s"]
    assert f"{ratio:7.2f}x" in text and "geometric mean" in text


def test_another_batch_and_frozen_word_embeddings_are_measured_as_asked(session_settings, data_root):
    """``--batch-size`` and ``--frozen-word-embeddings`` (docs/benchmarks.md, *Measured, not kept*) change what they name."""
    engine = benchmark.prepare("ChemProt", "tiny-deberta", examples=8, profile="smoke", settings=session_settings,
                               batch_size=4, frozen_word_embeddings=True)
    words = engine.model.get_input_embeddings().weight
    optimised = {id(p) for group in engine.optimizer.param_groups for p in group["params"]}
    assert engine.cfg.batch_size == 4 and not words.requires_grad and id(words) not in optimised
    assert len(optimised) == sum(1 for p in engine.model.parameters() if p.requires_grad)
    row = benchmark.measure("ChemProt", "tiny-deberta", examples=8, profile="smoke", settings=session_settings,
                            batch_size=4, frozen_word_embeddings=True)
    assert (row["batch_size"], row["word_embeddings"]) == (4, "frozen") and row["train_examples_per_s"] > 0
    assert benchmark.measure("ChemProt", "tiny-deberta", examples=8, profile="smoke",
                             settings=session_settings)["word_embeddings"] == "trained"


def test_compiled_training_keeps_pytorchs_dropout_and_says_so(session_settings, data_root):
    """``--compile`` (docs/benchmarks.md, *Measured, not kept*) trains through ``torch.compile`` with PyTorch's dropout, which
    inductor fuses; medibio's cheaper masks would break the graph at every dropout."""
    import torch

    from medibio.models.dropout import Dropout

    engine = benchmark.prepare("ChemProt", "tiny-deberta", examples=8, profile="smoke", settings=session_settings,
                               compiled=True)
    assert isinstance(engine.forward, torch._dynamo.eval_frame.OptimizedModule)
    assert engine.forward._orig_mod is engine.model
    assert not any(isinstance(m, Dropout) for m in engine.model.modules())
    plain = benchmark.prepare("ChemProt", "tiny-deberta", examples=8, profile="smoke", settings=session_settings)
    assert plain.forward is plain.model and any(isinstance(m, Dropout) for m in plain.model.modules())
    row = benchmark.measure("ChemProt", "tiny-deberta", examples=4, profile="smoke", settings=session_settings,
                            epochs=1, compiled=True)
    assert row["compiled"] is True and row["train_examples_per_s"] > 0 and row["matmul_only_s"] > 0
