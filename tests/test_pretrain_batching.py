"""Effective batch arithmetic (paper Section V-A: 4,096 per device x 3 nodes x 4 accumulation = 49,152)."""

from __future__ import annotations

import pytest

from medibio.pretrain.batching import BatchArithmeticError, BatchLayout, effective_batch, plan_batch
from medibio.pretrain.configs import get_config


def test_paper_batch_is_4096_x_3_x_4():
    assert effective_batch(4096, 3, 4) == 49_152
    cfg = get_config("medibiodeberta")
    assert effective_batch(cfg.per_device_batch, cfg.paper_processes, cfg.paper_accumulation) == cfg.effective_batch


def test_requested_batch_becomes_accumulation_steps():
    assert plan_batch(49_152, 4096, 3) == BatchLayout(4096, 3, 4)
    # One GPU with the same per-device batch needs three times the accumulation.
    assert plan_batch(49_152, 4096, 1).accumulation == 12
    assert plan_batch(256, 32, 2).accumulation == 4
    assert plan_batch(256, 32, 2).per_micro_step == 64


def test_small_request_shrinks_the_per_device_batch():
    assert plan_batch(8, 16, 1) == BatchLayout(8, 1, 1)
    with pytest.raises(BatchArithmeticError, match="not a multiple"):
        plan_batch(8, 16, 1, shrink_per_device=False)


def test_indivisible_request_names_the_nearest_valid_batches():
    with pytest.raises(BatchArithmeticError, match=r"choose 48 or 64"):
        plan_batch(50, 16, 1)
    with pytest.raises(BatchArithmeticError, match="3 processes"):
        plan_batch(49_152 + 1, 4096, 3)
    with pytest.raises(BatchArithmeticError, match="divisible by 3 processes"):
        plan_batch(8, 16, 3)


@pytest.mark.parametrize("bad", [0, -1])
def test_non_positive_values_are_rejected(bad):
    with pytest.raises(BatchArithmeticError):
        BatchLayout(bad, 1, 1)
    with pytest.raises(BatchArithmeticError):
        plan_batch(bad, 4, 1)
