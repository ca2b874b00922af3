"""The benchmarks' yardstick: the model-FLOP formula agrees with PyTorch's FLOP counter, the peak is measured,
and every benchmark command of docs/benchmarks.md starts."""

from __future__ import annotations

import subprocess
import sys

import pytest

from benchmarks import limits
from medibio.core.paths import REPO_ROOT


def _tiny_bert(layers: int = 2):
    from transformers import BertConfig, BertModel

    config = BertConfig(vocab_size=100, hidden_size=64, num_hidden_layers=layers, num_attention_heads=2,
                        intermediate_size=256, max_position_embeddings=64)
    # eager attention: PyTorch's FLOP counter does not count the CPU kernel of scaled-dot-product attention
    config._attn_implementation = "eager"
    return BertModel(config, add_pooling_layer=False).eval()


def test_the_flop_formula_agrees_with_pytorchs_counter() -> None:
    """Forward FLOPs of real tokens in a batch without padding: formula vs ``FlopCounterMode`` (matmuls only;
    the formula also counts biases and norms as weights, a few per cent)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    model = _tiny_bert()
    batch = {"input_ids": torch.randint(5, 100, (3, 40)), "attention_mask": torch.ones(3, 40, dtype=torch.long)}
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        model(**batch)
    counted = counter.get_total_flops()
    formula = limits.batch_flops(model, [batch], training=False)
    assert formula == pytest.approx(counted, rel=0.03)
    assert limits.batch_flops(model, [batch], training=True) == pytest.approx(3 * formula)


def test_training_flops_count_only_the_layers_that_learn() -> None:
    """Forward and backward FLOPs with the bottom layers frozen (SciERC's ``train_layers``): formula vs
    ``FlopCounterMode``. Backpropagation stops at the lowest layer that learns; the formula's 2 x forward for
    it also counts the input gradients of its Q, K and V projections, which autograd skips (a few per cent)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from medibio.training.stability import freeze_all_but_top

    model = _tiny_bert(layers=4)
    batch = {"input_ids": torch.randint(5, 100, (3, 40)), "attention_mask": torch.ones(3, 40, dtype=torch.long)}
    forward = limits.batch_flops(model, [batch], training=False)
    freeze_all_but_top(model, 1)
    assert limits.trained_layers(model) == 1
    with FlopCounterMode(display=False) as counter:
        model(**batch).last_hidden_state.sum().backward()
    counted = counter.get_total_flops()
    formula = limits.batch_flops(model, [batch], training=True)
    assert formula == pytest.approx(forward * (1 + 2 / 4))
    assert formula == pytest.approx(counted, rel=0.06)


def test_embeddings_are_not_matmul_weights_but_a_tied_head_is() -> None:
    from transformers import BertConfig, BertForMaskedLM

    model = _tiny_bert()
    table = sum(p.numel() for p in model.embeddings.parameters() if p.ndim == 2)  # word, position, type
    everything = sum(p.numel() for p in model.parameters())
    assert limits.non_embedding_parameters(model) == everything - table
    masked = BertForMaskedLM(BertConfig(vocab_size=100, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                                        intermediate_size=256, max_position_embeddings=64))
    word = masked.get_output_embeddings().weight.numel()
    base = limits.non_embedding_parameters(masked.bert)
    assert limits.non_embedding_parameters(masked) > base + word - 1  # the tied head multiplies every token


def test_deberta_counts_its_relative_positions() -> None:
    from transformers import DebertaV2Config, DebertaV2Model

    model = DebertaV2Model(DebertaV2Config(vocab_size=100, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                                           intermediate_size=128, relative_attention=True, position_buckets=8,
                                           pos_att_type=["p2c", "c2p"], max_position_embeddings=64))
    assert limits.encoder_shape(model) == {"layers": 2, "hidden": 64, "buckets": 8}
    plain = limits.flops_per_token(1000, 2, 64, 32)
    assert limits.flops_per_token(1000, 2, 64, 32, buckets=8) == plain + 3 * 2 * 8 * 8 * 64


def test_the_peak_is_measured_and_utilisation_is_its_fraction() -> None:
    peak = limits.matmul_peak("fp32", n=128, seconds=0.05)
    assert peak > 0
    assert limits.utilisation(2e12, 2.0, 4.0) == {"tflops": 1.0, "mfu": 0.25}
    assert limits.utilisation(1e12, 1.0, None)["mfu"] is None


def test_recorded_matmuls_count_what_pytorchs_counter_counts_forward_and_backward() -> None:
    """The ceiling's record of a bf16 training step: the same FLOPs as ``FlopCounterMode`` (which counts
    matmuls only), transposed weights and the backward pass included."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    model = _tiny_bert().train()
    batch = {"input_ids": torch.randint(5, 100, (3, 40)), "attention_mask": torch.ones(3, 40, dtype=torch.long)}

    def step() -> None:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = model(**batch).last_hidden_state
        out.float().sum().backward()

    calls = limits.record_matmuls(step)
    with FlopCounterMode(display=False) as counter:
        step()
    assert limits.matmul_flops(calls) == counter.get_total_flops() > 0
    assert any(args[0][3] == torch.bfloat16 for _, args, _ in calls)  # recorded in the precision they ran in
    assert any(len(args) > 1 and args[-1][2][0] == 1 for _, args, _ in calls)  # a transposed (weight) operand


def test_replay_runs_each_recorded_call_as_often_plus_one_warm_up() -> None:
    import torch

    a, b, bias = torch.randn(8, 16), torch.randn(32, 16), torch.randn(32)

    def step() -> None:
        for _ in range(3):
            torch.nn.functional.linear(a, b, bias)  # addmm with a transposed weight
        torch.bmm(torch.randn(2, 4, 5), torch.randn(2, 5, 6))

    calls = limits.record_matmuls(step)
    assert sorted(calls.values()) == [1, 3]
    assert limits.matmul_flops(calls) == 3 * 2 * 8 * 16 * 32 + 2 * 2 * 4 * 5 * 6
    seconds: list[float] = []
    replayed = limits.record_matmuls(lambda: seconds.append(limits.replay_seconds(calls)))
    assert replayed == {sig: n + 1 for sig, n in calls.items()}
    assert seconds[0] > 0


def test_the_peak_is_bracketed_around_the_block() -> None:
    with limits.bracketed_peak("fp32", seconds=0.02) as peak:
        assert set(peak) == {"peak_before_tflops"}
    assert peak["peak_before_tflops"] > 0 and peak["peak_after_tflops"] > 0
    assert peak["peak_tflops"] == pytest.approx((peak["peak_before_tflops"] + peak["peak_after_tflops"]) / 2, abs=1e-3)
    assert peak["peak_spread"] >= 0


def test_a_row_whose_peak_moved_is_flagged_in_the_table() -> None:
    from benchmarks import finetune_engine

    row = {"task": "GAD", "padding": "dynamic+buckets", "problem": "sequence_classification", "max_length": 128,
           "padded_tokens_per_example": 50.0, "padding_share": 0.1, "train_examples_per_s": 50.0,
           "quiet_train_examples_per_s": 50.0, "eval_examples_per_s": 100.0, "train_tokens_per_s": 2000.0,
           "train_model_tflops": 0.13, "peak_tflops": 0.6, "peak_spread": 0.05, "train_mfu": 0.2,
           "epoch_mfu": [0.18, 0.22], "matmul_share": 0.3, "eval_mfu": 0.3, "peak_memory_mb": 1000.0}
    steady = finetune_engine.table([row])
    assert "18.0%/22.0%" in steady and "!" not in steady
    unsteady = finetune_engine.table([{**row, "peak_spread": 0.9}])
    assert "0.60!" in unsteady and unsteady.splitlines()[-1].startswith("! the peak moved")


@pytest.mark.parametrize("name", ["finetune_speed", "finetune_engine", "scierc_speed", "pretrain_speed", "profile_step",
                                  "significance_speed", "fields_scale", "head_warmup"])
def test_every_benchmark_command_of_the_benchmarks_page_starts(name: str) -> None:
    """docs/benchmarks.md runs benchmarks as ``python -m benchmarks.<name>`` from the repository root."""
    done = subprocess.run([sys.executable, "-m", f"benchmarks.{name}", "--help"], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage:" in done.stdout
    assert f"python -m benchmarks.{name}" in (REPO_ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8") or \
        name == "finetune_engine"


def test_pretrain_speed_times_a_model_continued_as_the_trainer_loads_it() -> None:
    """``--init minilm`` (the study's arm #2): MiniLM with its new MLM head, its own shape and vocabulary."""
    from benchmarks import pretrain_speed

    row = pretrain_speed.bench("smoke", steps=1, warmup=0, device="cpu", batch=2, peak_override=1.0, init="minilm")
    assert row["config"] == "smoke+minilm" and row["tokens_per_s"] > 0
    assert row["flops_per_token"] > pretrain_speed.bench("smoke", 1, 0, "cpu", 2, 1.0)["flops_per_token"]
