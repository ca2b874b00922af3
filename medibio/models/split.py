"""An encoder whose embeddings and lower layers are frozen, run as two parts: the frozen part once per input,
the layers that learn at every step.

When only the top layers of an encoder learn (SciERC's cpu preset trains MiniLM's top two of six), the frozen
embeddings and lower layers compute the same function of an input at every epoch, except for their dropout
noise. :class:`FrozenBottom` runs them once per input in eval mode (no dropout, no autograd graph), keeps
their output by a key the caller names, and at every step runs only the top layers on it. The top layers'
dropout is unchanged. On the 2-core CPU this made a SciERC training step 1.4x faster (docs/benchmarks.md).

Both parts are views of the one encoder (they share its modules and parameters, so the optimiser, the state
dict and ``.to()`` see the encoder as before): the bottom view has the encoder's layers below the split, the
top view has the layers above it and an embedding module that passes its input through. This works for the
architectures that keep their layers in ``encoder.layer`` and take ``inputs_embeds`` (BERT, RoBERTa, ELECTRA,
DeBERTa-v1/v2/v3); DeBERTa-v2's convolution after the first layer (``conv_kernel_size``) would land on the
wrong layer in the top view and is refused.
"""

from __future__ import annotations

import copy
from collections.abc import Hashable, Sequence
from typing import Any

import torch
from torch import nn

from medibio.core.errors import MedibioError


class _PassThrough(nn.Module):
    """Stands in for the embeddings in the top view: the hidden states come in as ``inputs_embeds``."""

    def forward(self, *args: Any, inputs_embeds: torch.Tensor | None = None, **kwargs: Any) -> torch.Tensor:
        if inputs_embeds is None:
            raise MedibioError("the top layers of a split encoder take hidden states (inputs_embeds), not ids")
        return inputs_embeds


def _view(module: nn.Module, **replace: nn.Module) -> nn.Module:
    """A shallow copy of ``module`` with some child modules replaced; the others (and parameters) shared."""
    clone = copy.copy(module)
    clone._modules = {**module._modules, **replace}
    return clone


class FrozenBottom:
    """``encoder`` split below its top ``top`` layers; call it with one hashable key per row.

    Not an ``nn.Module`` on purpose: it holds views of modules its owner already registers, and registering
    them again would list every parameter twice in a state dict.
    """

    def __init__(self, encoder: nn.Module, top: int) -> None:
        if getattr(encoder.config, "conv_kernel_size", 0):
            raise MedibioError(f"{encoder.config.model_type}: the convolution after the first layer cannot be "
                               "split off; train it without reusing frozen layers")
        owner = getattr(encoder, "encoder", None)
        if not isinstance(getattr(owner, "layer", None), nn.ModuleList) or not hasattr(encoder, "embeddings"):
            raise MedibioError(f"{type(encoder).__name__}: no embeddings and encoder.layer to split")
        layers = list(owner.layer)
        if not 0 < top < len(layers):
            raise MedibioError(f"cannot split {len(layers)} layers below the top {top}")
        self.bottom = _view(encoder, encoder=_view(owner, layer=nn.ModuleList(layers[:-top])))
        self.top = _view(encoder, embeddings=_PassThrough(),
                         encoder=_view(owner, layer=nn.ModuleList(layers[-top:])))
        self.cache: dict[Hashable, torch.Tensor] = {}
        self.bottom_rows = 0  # rows the frozen part has computed (each key once)

    def _fill(self, keys: Sequence[Hashable], input_ids: torch.Tensor, attention_mask: torch.Tensor) -> None:
        """Run the frozen part on the rows whose key is not cached yet, in eval mode, and keep each row's
        output up to its length."""
        missing = [i for i, key in enumerate(keys) if key not in self.cache]
        if not missing:
            return
        rows = torch.tensor(missing, device=input_ids.device)
        modes = {module: module.training for module in self.bottom.modules()}
        self.bottom.eval()
        try:
            with torch.no_grad():
                out = self.bottom(input_ids=input_ids[rows], attention_mask=attention_mask[rows]).last_hidden_state
        finally:
            for module, training in modes.items():
                module.training = training
        lengths = attention_mask[rows].sum(dim=1).tolist()
        for i, hidden, n in zip(missing, out, lengths, strict=True):
            self.cache[keys[i]] = hidden[:n].clone()  # not a view: the batch's tensor is freed
        self.bottom_rows += len(missing)

    def __call__(self, keys: Sequence[Hashable], input_ids: torch.Tensor, attention_mask: torch.Tensor
                 ) -> torch.Tensor:
        """The top layer's hidden states ``[rows, length, hidden]`` for rows named by ``keys`` (a key must
        always name the same input ids)."""
        if len(keys) != input_ids.shape[0]:
            raise ValueError(f"{len(keys)} keys for {input_ids.shape[0]} rows")
        self._fill(keys, input_ids, attention_mask)
        kept = [self.cache[key] for key in keys]
        length = input_ids.shape[1]
        hidden = torch.stack([nn.functional.pad(h, (0, 0, 0, length - h.shape[0])) for h in kept])
        return self.top(inputs_embeds=hidden, attention_mask=attention_mask).last_hidden_state
