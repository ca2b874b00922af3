"""Fine-tuning stabilisation methods studied by Tinn et al. (Patterns 2023, "fine-tuning stability" paper).

Five switches, each independent and off by default except Adam bias correction:

* ``freeze_lower``: keep the embeddings and the lower half of the encoder layers fixed (6 of 12 for a BASE
  model); only the upper layers and the head adapt, which protects small datasets from over-fitting.
* ``layerwise_lr_decay`` (0.8 or 0.9 in the paper, following ELECTRA): the top layer trains at the base
  learning rate, each layer below at ``decay`` times the one above, the embeddings lowest; the task head
  keeps the full rate. (ELECTRA's own code also discounts the top layer by ``decay**2`` relative to the
  head; here the top layer gets the full rate, the common reading.)
* ``reinit_top_k``: re-draw the top k encoder layers from the model's own initialiser before training;
  their pretrained weights are specialised to the pretraining objective (up to 3 for BASE, 6 for LARGE).
* ``bias_correction``: Adam's debiasing of the moment estimates. ``False`` reproduces the original BERT
  optimiser (BertAdam), whose first updates are about ``(1 - beta1) / sqrt(1 - beta2)`` = 3.16 times larger.
* ``longer_training``: multiply the number of epochs (the paper trains up to 100 epochs instead of 5).

One more option shapes the optimiser the same way: ``head_lr_scale``, the new task head's learning rate as a
multiple of the encoder's. Each option is spelled once, in :data:`medibio.training.options.SWITCHES`: the
fine-tuning option that sets it, the note a run record carries when it is on, and its part of a run family's
variant name.

Parameters are split into tiers: ``embeddings`` (token/position embeddings and every other parameter of the
base model outside the per-layer modules, such as DeBERTa's shared relative-position embeddings, which all
layers read), one tier per encoder layer, and ``head`` (the task head plus BERT's pooler, which sits above
the top layer).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import torch
from torch import nn

from medibio.core.errors import MedibioError
from medibio.training.options import StabilityOptions


class UnsupportedArchitectureError(MedibioError, ValueError):
    """The model has no per-layer modules, so a layer-wise method cannot be applied to it."""


def _base_model(model: nn.Module) -> nn.Module:
    return getattr(model, "base_model", model)


def encoder_layers(model: nn.Module) -> list[nn.Module]:
    """The encoder's layers, bottom to top (BERT, RoBERTa, ELECTRA, DeBERTa-v1/v2/v3, DistilBERT).

    ALBERT is refused: it reuses one set of layer weights at every depth, so "the lower half", "the top k"
    or a per-depth learning rate do not name distinct parameters.
    """
    base = _base_model(model)
    model_type = getattr(getattr(model, "config", None), "model_type", type(model).__name__)
    encoder = getattr(base, "encoder", None)
    if encoder is not None and hasattr(encoder, "albert_layer_groups"):
        raise UnsupportedArchitectureError(
            f"{model_type}: ALBERT shares one set of transformer-layer weights across all depths, so layer "
            "freezing, layer-wise learning-rate decay and top-layer re-initialisation are undefined for it; "
            "fine-tune it without these options"
        )
    for owner in (encoder, getattr(base, "transformer", None)):
        layers = getattr(owner, "layer", None)
        if isinstance(layers, nn.ModuleList) and len(layers) > 0:
            return list(layers)
    raise UnsupportedArchitectureError(
        f"{model_type}: no per-layer encoder modules found (looked for base_model.encoder.layer and "
        "base_model.transformer.layer); layer-wise stability options need them"
    )


def parameter_tiers(model: nn.Module) -> dict[str, list[tuple[str, nn.Parameter]]]:
    """Named parameters by tier: ``embeddings``, ``layer.0`` ... ``layer.{L-1}`` (bottom to top), ``head``."""
    layers = encoder_layers(model)
    base = _base_model(model)
    owner: dict[int, str] = {}
    for i, layer in enumerate(layers):
        for p in layer.parameters():
            owner[id(p)] = f"layer.{i}"
    base_ids = {id(p) for p in base.parameters()}
    pooler = getattr(base, "pooler", None)
    pooler_ids = {id(p) for p in pooler.parameters()} if isinstance(pooler, nn.Module) else set()
    tiers: dict[str, list[tuple[str, nn.Parameter]]] = {"embeddings": []}
    tiers.update({f"layer.{i}": [] for i in range(len(layers))})
    tiers["head"] = []
    for name, p in model.named_parameters():
        if id(p) in owner:
            tiers[owner[id(p)]].append((name, p))
        elif id(p) in base_ids and id(p) not in pooler_ids:
            tiers["embeddings"].append((name, p))
        else:
            tiers["head"].append((name, p))
    return tiers


def _reinit(model: nn.Module, module: nn.Module) -> None:
    """Re-draw a module with the model's own ``_init_weights``.

    transformers marks loaded tensors ``_is_hf_initialized`` and its init functions then do nothing, so the
    mark is cleared first (otherwise re-initialisation silently keeps the pretrained weights).
    """
    init_fn = getattr(model, "_init_weights", None)
    if init_fn is None:
        raise UnsupportedArchitectureError(f"{type(model).__name__} has no _init_weights to re-initialise with")
    for p in module.parameters():
        if getattr(p, "_is_hf_initialized", False):
            p._is_hf_initialized = False
    module.apply(init_fn)
    for p in module.parameters():
        p._is_hf_initialized = True


def apply_model_surgery(model: nn.Module, opts: StabilityOptions) -> dict[str, Any]:
    """Apply re-initialisation and freezing in place; return what was done (for the run record).

    Call it after loading the pretrained model and before building the optimiser (frozen parameters are
    left out of the parameter groups). Seed torch first: re-initialisation draws random numbers.
    """
    summary: dict[str, Any] = {"reinitialised_layers": [], "frozen_parameters": 0, "frozen_tiers": []}
    if not opts.uses_layers:
        return summary
    layers = encoder_layers(model)
    n = len(layers)
    if opts.reinit_top_k > n:
        raise ValueError(f"reinit_top_k={opts.reinit_top_k} but the model has only {n} encoder layers")
    for i in range(n - opts.reinit_top_k, n):
        _reinit(model, layers[i])
        summary["reinitialised_layers"].append(i)
    if opts.freeze_lower:
        tiers = parameter_tiers(model)
        frozen = ["embeddings", *(f"layer.{i}" for i in range(n // 2))]
        for tier in frozen:
            for _, p in tiers[tier]:
                p.requires_grad_(False)
                summary["frozen_parameters"] += p.numel()
        summary["frozen_tiers"] = frozen
    return summary


def freeze_all_but_top(model: nn.Module, top: int) -> dict[str, Any]:
    """Freeze the embeddings and every encoder layer below the top ``top`` ones, in place; return what was
    frozen (for the run record). Backpropagation then stops at the lowest trainable layer, which is what makes
    it cheaper than full fine-tuning, not only more stable."""
    layers = encoder_layers(model)
    if not 0 <= top <= len(layers):
        raise ValueError(f"top={top} but the model has {len(layers)} encoder layers")
    tiers = parameter_tiers(model)
    frozen = ["embeddings", *(f"layer.{i}" for i in range(len(layers) - top))]
    count = 0
    for tier in frozen:
        for _, p in tiers[tier]:
            p.requires_grad_(False)
            count += p.numel()
    return {"frozen_tiers": frozen, "frozen_parameters": count}


def _no_decay(model: nn.Module) -> set[int]:
    """Ids of biases and normalisation weights: weight decay would only pull them towards 0 for no gain."""
    ids: set[int] = set()
    for module in model.modules():
        is_norm = isinstance(module, (nn.LayerNorm, nn.GroupNorm)) or "LayerNorm" in type(module).__name__ \
            or "RMSNorm" in type(module).__name__
        for pname, p in module.named_parameters(recurse=False):
            if is_norm or pname == "bias" or pname.endswith("bias"):
                ids.add(id(p))
    return ids


def tier_learning_rates(n_layers: int, lr: float, decay: float | None) -> dict[str, float]:
    """lr per tier: head and top layer ``lr``, layer ``i`` ``lr*decay**(L-1-i)``, embeddings ``lr*decay**L``."""
    d = 1.0 if decay is None else decay
    rates = {"embeddings": lr * d ** n_layers}
    rates.update({f"layer.{i}": lr * d ** (n_layers - 1 - i) for i in range(n_layers)})
    rates["head"] = lr
    return rates


def param_groups(model: nn.Module, lr: float, weight_decay: float, opts: StabilityOptions) -> list[dict]:
    """Optimiser parameter groups: per tier (when LLRD is on) x with/without weight decay.

    Frozen parameters are left out. Each group carries a ``name`` (e.g. ``"layer.3/no_decay"``) for logs.
    """
    no_decay = _no_decay(model)
    if opts.layerwise_lr_decay is None and opts.head_lr_scale == 1.0:
        tiers = {"all": list(model.named_parameters())}
        rates = {"all": lr}
    else:
        tiers = parameter_tiers(model)
        if opts.layerwise_lr_decay is None:
            rates = dict.fromkeys(tiers, lr)
        else:
            rates = tier_learning_rates(len(tiers) - 2, lr, opts.layerwise_lr_decay)
        rates["head"] *= opts.head_lr_scale
    groups = []
    for tier, named in tiers.items():
        for suffix, wd, keep in (("decay", weight_decay, False), ("no_decay", 0.0, True)):
            params = [p for _, p in named if p.requires_grad and ((id(p) in no_decay) == keep)]
            if params:
                groups.append({"name": f"{tier}/{suffix}", "params": params, "lr": rates[tier],
                               "weight_decay": wd})
    if not groups:
        raise ValueError("no trainable parameters left (everything is frozen)")
    return groups


class AdamWNoBiasCorrection(torch.optim.Optimizer):
    """AdamW without the moment debiasing, as in the original BERT optimiser (BertAdam).

    Identical to ``torch.optim.AdamW`` (decoupled weight decay applied first) except that the update is
    ``m / (sqrt(v) + eps)`` instead of ``m_hat / (sqrt(v_hat) + eps)``.
    """

    def __init__(self, params: Iterable, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.01) -> None:
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay})

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                state["step"] += 1
                p.mul_(1 - group["lr"] * group["weight_decay"])
                state["exp_avg"].mul_(beta1).add_(p.grad, alpha=1 - beta1)
                state["exp_avg_sq"].mul_(beta2).addcmul_(p.grad, p.grad, value=1 - beta2)
                denom = state["exp_avg_sq"].sqrt().add_(group["eps"])
                p.addcdiv_(state["exp_avg"], denom, value=-group["lr"])
        return loss


def make_optimizer(params: Iterable, lr: float, opts: StabilityOptions, betas: tuple[float, float] = (0.9, 0.999),
                   eps: float = 1e-8, weight_decay: float = 0.0) -> torch.optim.Optimizer:
    """AdamW (with bias correction) or BertAdam-style AdamW without it, per ``opts.bias_correction``.

    ``weight_decay`` is the default for groups that do not set their own (those of :func:`param_groups` do).
    """
    if opts.bias_correction:
        return adamw(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
    return AdamWNoBiasCorrection(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)


def adamw(params: Iterable, **kwargs: Any) -> torch.optim.Optimizer:
    """``torch.optim.AdamW`` with its fused kernel where every parameter is a float tensor on the CPU or a
    GPU. On CPU tensors torch otherwise steps parameter by parameter: for MiniLM's 22M parameters that was
    0.71 s per optimiser step against 0.10 s fused on this 2-core machine, 14 % of an NER run's time."""
    params = list(params)
    tensors = [p for item in params for p in (item["params"] if isinstance(item, dict) else [item])]
    fused = bool(tensors) and all(p.device.type in ("cpu", "cuda") and p.is_floating_point() for p in tensors)
    return torch.optim.AdamW(params, fused=fused or None, **kwargs)


def scaled_epochs(epochs: int | float, opts: StabilityOptions) -> int | float:
    """Epochs after ``longer_training``: an int stays an int (rounded up), a fractional budget stays a float."""
    scaled = round(epochs * opts.longer_training, 9)
    if isinstance(epochs, int):
        return max(1, math.ceil(scaled))
    return scaled
