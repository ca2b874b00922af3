"""Dropout with cheaper masks (medibio.models.dropout): dropout's distribution, reproducible per seed, and a
model swapped onto it computes what it computed before wherever no element is dropped."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from medibio.models import dropout as cheap


def test_mask_is_dropouts_distribution():
    torch.manual_seed(0)
    p = 0.1
    mask = cheap.keep_mask((1000, 1000), p, torch.float32)
    drop = round(p * cheap.LEVELS) / cheap.LEVELS
    scale = 1 / (1 - drop)
    values = mask.unique().tolist()
    assert values[0] == 0.0 and values[1] == pytest.approx(scale) and len(values) == 2
    kept = (mask > 0).float()
    # 10^6 independent draws: the keep rate is within 5 standard deviations (0.0015) of 1 - p
    assert abs(kept.mean().item() - (1 - drop)) < 0.0015
    # each of the four 16-bit slices of a 64-bit draw is unbiased (a sign bit that never flips would show here)
    for slot in range(4):
        assert abs(kept.view(-1, 4)[:, slot].mean().item() - (1 - drop)) < 0.003
    # neighbouring elements are independent: the keep rate of pairs is the square of the rate
    pairs = (kept.view(-1, 2).sum(dim=1) == 2).float().mean().item()
    assert abs(pairs - (1 - drop) ** 2) < 0.003
    assert abs(mask.mean().item() - 1.0) < 0.003  # the scale keeps the expectation


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_dropout_reproducible_per_seed_and_identity_in_eval(dtype):
    x = torch.randn(3, 5, 7, dtype=dtype)
    torch.manual_seed(4)
    a = cheap.dropout(x, 0.25)
    torch.manual_seed(4)
    b = cheap.dropout(x, 0.25)
    assert torch.equal(a, b) and a.dtype == dtype and a.shape == x.shape
    assert torch.equal(cheap.dropout(x, 0.25, training=False), x)
    assert torch.equal(cheap.dropout(x, 0.0), x)
    assert torch.count_nonzero(cheap.dropout(x, 1.0)) == 0
    assert torch.count_nonzero(cheap.dropout(x, 0.999999)) == 0  # rounds to every slice: zeros, not inf/NaN
    kept = a != 0
    assert torch.allclose(a[kept].float(), (x[kept].float() / (1 - round(0.25 * cheap.LEVELS) / cheap.LEVELS)),
                          rtol=1e-2)


def test_gradient_flows_through_kept_elements_only():
    x = torch.ones(64, 64, requires_grad=True)
    torch.manual_seed(1)
    y = cheap.dropout(x, 0.5)
    y.sum().backward()
    assert torch.equal(x.grad, y.detach())  # d(x * mask)/dx = mask


def _bert(dropout: float = 0.1):
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=64, hidden_dropout_prob=dropout,
                        attention_probs_dropout_prob=dropout, attn_implementation="sdpa")
    return BertModel(config)


def _inputs():
    ids = torch.randint(5, 100, (3, 12), generator=torch.Generator().manual_seed(2))
    mask = torch.ones(3, 12, dtype=torch.long)
    mask[1, 8:] = 0  # one padded row: the attention mask is applied
    return {"input_ids": ids, "attention_mask": mask}


def test_swap_keeps_state_dict_training_flags_and_evaluation():
    model = _bert().eval()
    before = model(**_inputs()).last_hidden_state
    state = {k: v.clone() for k, v in model.state_dict().items()}
    swapped = cheap.use_cheap_dropout(model, "cpu")
    assert swapped == sum(isinstance(m, cheap.Dropout) for m in model.modules()) > 0
    assert not any(type(m) is nn.Dropout for m in model.modules())
    assert not any(m.training for m in model.modules())  # an eval model stays in eval (no dropout at test time)
    assert model.config._attn_implementation == cheap.ATTENTION
    assert state.keys() == model.state_dict().keys()
    assert all(torch.equal(state[k], v) for k, v in model.state_dict().items())
    assert torch.equal(model(**_inputs()).last_hidden_state, before)  # evaluation: the sdpa path, bit for bit


def test_training_attention_matches_sdpa_when_nothing_is_dropped():
    """A dropout probability so small that no 16-bit slice falls under it takes the training path (the
    explicit product) and must agree with PyTorch's fused attention, padding mask included."""
    model = _bert(dropout=1e-9)
    reference = _bert(dropout=0.0).eval()
    cheap.use_cheap_dropout(model, "cpu")
    model.train()
    out = model(**_inputs()).last_hidden_state
    assert torch.allclose(out, reference(**_inputs()).last_hidden_state, atol=1e-5)
    out.sum().backward()
    assert all(p.grad is not None for n, p in model.named_parameters() if "pooler" not in n)


def test_training_differs_between_seeds_and_repeats_within_one():
    model = _bert()
    cheap.use_cheap_dropout(model, "cpu")
    model.train()
    outs = []
    for seed in (7, 7, 8):
        torch.manual_seed(seed)
        outs.append(model(**_inputs()).last_hidden_state)
    assert torch.equal(outs[0], outs[1]) and not torch.equal(outs[0], outs[2])


def test_other_devices_keep_pytorch_dropout():
    model = _bert()
    assert cheap.use_cheap_dropout(model, "meta") == 0
    assert any(type(m) is nn.Dropout for m in model.modules())
    assert model.config._attn_implementation == "sdpa"


def test_saved_model_loads_without_medibio(tmp_path):
    from transformers import BertModel

    model = _bert()
    cheap.use_cheap_dropout(model, "cpu")
    model.save_pretrained(tmp_path)
    assert "medibio" not in (tmp_path / "config.json").read_text()
    loaded = BertModel.from_pretrained(tmp_path)
    assert all(type(m) is not cheap.Dropout for m in loaded.modules())
