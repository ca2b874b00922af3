"""Dropout with cheaper random masks, for training on the CPU.

PyTorch's CPU dropout draws one Bernoulli number per element (``aten::bernoulli_``): on a MiniLM training
step that was a fifth of the time, a third of a SciERC step (``benchmarks/profile_step.py``), more than the
softmax, the layer norms and the GELUs together. :func:`keep_mask` draws 64 random bits for every four
elements from the same seeded generator and keeps an element when its 16-bit slice is at or above a
threshold, about 3.5x faster. Each element is dropped independently with probability
``round(p * 65536) / 65536`` (p = 0.1: 0.100006) and a kept one is scaled by the inverse of the keep rate, so
the distribution is dropout's up to that rounding; the random stream is another one, which is why the run
protocol's version names this change (:data:`medibio.runs.protocol.PROTOCOL`).

:func:`use_cheap_dropout` swaps a model's ``nn.Dropout`` modules for :class:`Dropout` and moves a model whose
attention goes through ``scaled_dot_product_attention`` (BERT, MiniLM, ...) to :func:`attention`: with a
dropout probability PyTorch runs that attention unfused and draws its mask with ``bernoulli_``, so the
training path computes the same product with :func:`keep_mask`; without dropout (evaluation) it is the
``sdpa`` path unchanged. GPUs keep PyTorch's own dropout, whose masks are cheap there.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

LEVELS = 1 << 16  # a 16-bit slice of the random bits per element
ATTENTION = "medibio_sdpa"  # the name under which transformers finds :func:`attention`


def keep_mask(shape: torch.Size | tuple[int, ...], p: float, dtype: torch.dtype, device: Any = None) -> torch.Tensor:
    """Dropout's scaled keep mask: 0 with probability ``round(p * 65536) / 65536``, else 1 / (1 - that)."""
    n = math.prod(shape)
    drop = round(p * LEVELS)
    bits = torch.empty((n + 3) // 4, dtype=torch.int64, device=device).random_(-(2**63), 2**63 - 1)
    slices = bits.view(torch.int16)[:n].view(shape)
    # bool -> float is slow on the CPU, uint8 -> float is not: the comparison's bytes are read as uint8
    return (slices >= drop - LEVELS // 2).view(torch.uint8).to(dtype).mul_(LEVELS / (LEVELS - drop))


def dropout(x: torch.Tensor, p: float, training: bool = True) -> torch.Tensor:
    """``nn.functional.dropout`` with :func:`keep_mask`'s masks."""
    if not training or p == 0.0:
        return x
    if round(p * LEVELS) >= LEVELS:  # every slice dropped (also p just under 1, where 1 / keep rate has no value)
        return torch.zeros_like(x)
    return x * keep_mask(x.shape, p, x.dtype, x.device)


class Dropout(nn.Dropout):
    """``nn.Dropout`` (same ``p``, same place in the module tree and state dict) with :func:`keep_mask`."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return dropout(x, self.p, self.training)


def attention(module: nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
              attention_mask: torch.Tensor | None, dropout: float = 0.0, scaling: float | None = None,
              **kwargs: Any) -> tuple[torch.Tensor, None]:
    """transformers' ``sdpa`` attention; with a dropout probability, the same product computed in the
    inputs' precision (as PyTorch's unfused path does) with :func:`keep_mask` on the probabilities."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    if not dropout or not module.training:
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=0.0, scaling=scaling,
                                      **kwargs)
    if kwargs.get("is_causal") or getattr(module, "is_causal", False):
        raise NotImplementedError("medibio's attention serves encoders; a causal model keeps 'sdpa'")
    if key.shape[1] != query.shape[1]:  # grouped-query attention: as many key/value heads as query heads
        groups = query.shape[1] // key.shape[1]
        key, value = key.repeat_interleave(groups, dim=1), value.repeat_interleave(groups, dim=1)
    scale = query.shape[-1] ** -0.5 if scaling is None else scaling
    with torch.autocast(query.device.type, enabled=False):
        scores = torch.matmul(query, key.transpose(-1, -2)).mul_(scale)
        if attention_mask is not None:
            if attention_mask.dtype == torch.bool:
                attention_mask = torch.zeros(attention_mask.shape, dtype=scores.dtype, device=scores.device
                                             ).masked_fill_(~attention_mask, torch.finfo(scores.dtype).min)
            scores = scores + attention_mask.to(scores.dtype)
        probs = torch.softmax(scores, dim=-1)
        out = torch.matmul(probs * keep_mask(probs.shape, dropout, probs.dtype, probs.device), value)
    return out.transpose(1, 2).contiguous(), None


def _register() -> None:
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, sdpa_mask

    AttentionInterface.register(ATTENTION, attention)
    ALL_MASK_ATTENTION_FUNCTIONS.register(ATTENTION, sdpa_mask)


def use_cheap_dropout(model: nn.Module, device: Any) -> int:
    """On the CPU, swap ``model``'s dropout for :class:`Dropout` and :func:`attention` in place; elsewhere
    leave it. Returns how many modules were swapped; parameters and state dict are untouched."""
    from transformers import PreTrainedModel

    if torch.device(device).type != "cpu":
        return 0
    swapped = 0
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if type(child) is nn.Dropout:
                setattr(parent, name, Dropout(child.p).train(child.training))
                swapped += 1
    _register()
    for sub in model.modules():
        if isinstance(sub, PreTrainedModel) and sub.config._attn_implementation == "sdpa":
            sub.config._attn_implementation = ATTENTION
    return swapped
