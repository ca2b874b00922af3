"""Each stability flag on the tiny DeBERTa and on MiniLM (real pretrained BERT), plus architecture checks."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from medibio.training import stability as S


def _load(which: str) -> nn.Module:
    from transformers import AutoModelForSequenceClassification
    from transformers.utils import logging

    from medibio.core.settings import Settings
    from medibio.models import zoo as modelzoo

    logging.set_verbosity_error()
    path = modelzoo.resolve(which, Settings.from_env().cache_root)  # tiny-deberta: built in the session's cache
    torch.manual_seed(0)
    return AutoModelForSequenceClassification.from_pretrained(str(path), num_labels=2)


MODELS = ["tiny-deberta", "minilm"]
N_LAYERS = {"tiny-deberta": 2, "minilm": 6}


def _step(model: nn.Module, opt: torch.optim.Optimizer) -> None:
    """One optimiser step on a tiny batch (random token ids within the vocabulary)."""
    torch.manual_seed(1)
    ids = torch.randint(5, model.config.vocab_size, (2, 12))
    out = model(input_ids=ids, attention_mask=torch.ones_like(ids), labels=torch.tensor([0, 1]))
    out.loss.backward()
    opt.step()
    opt.zero_grad()


def _snapshot(model: nn.Module) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in model.named_parameters()}


@pytest.mark.parametrize("which", MODELS)
def test_encoder_layers_and_tiers(which: str):
    model = _load(which)
    layers = S.encoder_layers(model)
    assert len(layers) == N_LAYERS[which]
    tiers = S.parameter_tiers(model)
    assert list(tiers) == ["embeddings", *(f"layer.{i}" for i in range(len(layers))), "head"]
    named = {n for tier in tiers.values() for n, _ in tier}
    assert named == {n for n, _ in model.named_parameters()}  # every parameter in exactly one tier
    assert sum(len(t) for t in tiers.values()) == len(named)
    head = {n for n, _ in tiers["head"]}
    assert any(n.startswith("classifier") for n in head)
    assert all("encoder.layer" not in n for n in head)
    if which == "minilm":
        assert "bert.pooler.dense.weight" in head
        assert "bert.embeddings.word_embeddings.weight" in {n for n, _ in tiers["embeddings"]}
    else:  # DeBERTa's shared relative-position embeddings sit with the embeddings
        assert "deberta.encoder.rel_embeddings.weight" in {n for n, _ in tiers["embeddings"]}


def test_other_architectures():
    from transformers import (
        AlbertConfig,
        AlbertForSequenceClassification,
        ElectraConfig,
        ElectraForSequenceClassification,
        RobertaConfig,
        RobertaForSequenceClassification,
    )

    small = {"vocab_size": 50, "hidden_size": 16, "num_hidden_layers": 3, "num_attention_heads": 2,
             "intermediate_size": 32, "max_position_embeddings": 40}
    electra = ElectraForSequenceClassification(ElectraConfig(embedding_size=8, **small))
    assert len(S.encoder_layers(electra)) == 3
    assert "electra.embeddings_project.weight" in {n for n, _ in S.parameter_tiers(electra)["embeddings"]}
    roberta = RobertaForSequenceClassification(RobertaConfig(**small))
    assert len(S.encoder_layers(roberta)) == 3
    albert = AlbertForSequenceClassification(AlbertConfig(embedding_size=8, **small))
    with pytest.raises(S.UnsupportedArchitectureError, match="shares one set"):
        S.encoder_layers(albert)
    with pytest.raises(S.UnsupportedArchitectureError):
        S.apply_model_surgery(albert, S.StabilityOptions(layerwise_lr_decay=0.9))
    # options that do not need layers work for ALBERT too
    assert S.apply_model_surgery(albert, S.StabilityOptions(bias_correction=False))["frozen_parameters"] == 0


@pytest.mark.parametrize("which", MODELS)
def test_freeze_lower_half(which: str):
    model = _load(which)
    opts = S.StabilityOptions(freeze_lower=True)
    summary = S.apply_model_surgery(model, opts)
    n = N_LAYERS[which]
    assert summary["frozen_tiers"] == ["embeddings", *(f"layer.{i}" for i in range(n // 2))]
    tiers = S.parameter_tiers(model)
    frozen = {name for t in summary["frozen_tiers"] for name, _ in tiers[t]}
    assert summary["frozen_parameters"] == sum(p.numel() for t in summary["frozen_tiers"] for _, p in tiers[t])
    for name, p in model.named_parameters():
        assert p.requires_grad == (name not in frozen), name
    groups = S.param_groups(model, 1e-3, 0.01, opts)
    in_groups = {id(p) for g in groups for p in g["params"]}
    assert all(id(p) not in in_groups for _, p in model.named_parameters() if not p.requires_grad)
    before = _snapshot(model)
    _step(model, S.make_optimizer(groups, 1e-3, opts))
    after = _snapshot(model)
    assert all(torch.equal(before[k], after[k]) for k in frozen)
    top_weights = [k for k, _ in tiers[f"layer.{n - 1}"] if before[k].ndim == 2]
    assert all(not torch.equal(before[k], after[k]) for k in top_weights)


@pytest.mark.parametrize("which", MODELS)
@pytest.mark.parametrize("top", [0, 1])
def test_freeze_all_but_top_layers(which: str, top: int):
    model = _load(which)
    n = N_LAYERS[which]
    summary = S.freeze_all_but_top(model, top)
    assert summary["frozen_tiers"] == ["embeddings", *(f"layer.{i}" for i in range(n - top))]
    tiers = S.parameter_tiers(model)
    frozen = {name for t in summary["frozen_tiers"] for name, _ in tiers[t]}
    assert summary["frozen_parameters"] == sum(p.numel() for t in summary["frozen_tiers"] for _, p in tiers[t])
    for name, p in model.named_parameters():
        assert p.requires_grad == (name not in frozen), name
    with pytest.raises(ValueError, match="encoder layers"):
        S.freeze_all_but_top(_load(which), n + 1)


@pytest.mark.parametrize("decay", [None, 0.9])
def test_head_lr_scale_speeds_up_only_the_new_head(decay):
    model = _load("minilm")
    opts = S.StabilityOptions(layerwise_lr_decay=decay, head_lr_scale=20.0)
    groups = S.param_groups(model, 1e-4, 0.01, opts)
    head_ids = {id(p) for _, p in S.parameter_tiers(model)["head"]}
    for g in groups:
        in_head = {id(p) in head_ids for p in g["params"]}
        assert len(in_head) == 1, g["name"]  # a group is all head or no head
        if in_head == {True}:
            assert g["lr"] == pytest.approx(2e-3), g["name"]
        else:
            assert g["lr"] <= 1e-4 + 1e-12, g["name"]
    assert "task head lr x20" in opts.describe()
    with pytest.raises(ValueError, match="head_lr_scale"):
        S.StabilityOptions(head_lr_scale=0)


def test_head_lr_scale_enters_the_config_only_when_set():
    from medibio.training.config import FinetuneConfig

    assert "head_lr_scale" not in FinetuneConfig().to_dict()  # earlier records keep their digests
    assert FinetuneConfig().replace(head_lr_scale="10").to_dict()["head_lr_scale"] == 10.0


@pytest.mark.parametrize("which", MODELS)
@pytest.mark.parametrize("decay", [0.8, 0.9])
def test_layerwise_lr_decay(which: str, decay: float):
    model = _load(which)
    lr, n = 2e-5, N_LAYERS[which]
    groups = S.param_groups(model, lr, 0.01, S.StabilityOptions(layerwise_lr_decay=decay))
    lr_of = {id(p): g["lr"] for g in groups for p in g["params"]}
    tiers = S.parameter_tiers(model)
    for i in range(n):  # top layer lr, each lower layer x decay
        assert [lr_of[id(p)] for _, p in tiers[f"layer.{i}"]] == pytest.approx(
            [lr * decay ** (n - 1 - i)] * len(tiers[f"layer.{i}"]))
    assert [lr_of[id(p)] for _, p in tiers["embeddings"]] == pytest.approx(
        [lr * decay ** n] * len(tiers["embeddings"]))
    assert {lr_of[id(p)] for _, p in tiers["head"]} == {lr}
    # the optimiser keeps the per-group rates: one distinct rate per depth, lr * decay**k for k = 0..n
    opt = S.make_optimizer(groups, lr, S.StabilityOptions(layerwise_lr_decay=decay))
    assert sorted({g["lr"] for g in opt.param_groups}) == pytest.approx(
        sorted(lr * decay ** k for k in range(n + 1)))


def test_no_weight_decay_on_bias_and_layernorm():
    model = _load("minilm")
    groups = S.param_groups(model, 1e-4, 0.01, S.StabilityOptions())
    wd_of = {id(p): g["weight_decay"] for g in groups for p in g["params"]}
    named = dict(model.named_parameters())
    assert wd_of[id(named["bert.encoder.layer.0.attention.output.LayerNorm.weight"])] == 0.0
    assert wd_of[id(named["bert.encoder.layer.0.attention.self.query.bias"])] == 0.0
    assert wd_of[id(named["classifier.bias"])] == 0.0
    assert wd_of[id(named["bert.encoder.layer.0.attention.self.query.weight"])] == 0.01
    assert wd_of[id(named["bert.embeddings.word_embeddings.weight"])] == 0.01
    assert len(wd_of) == len(named)


@pytest.mark.parametrize("which", MODELS)
@pytest.mark.parametrize("k", [1, 2])
def test_reinit_top_k_changes_exactly_those_layers(which: str, k: int):
    model = _load(which)
    n = N_LAYERS[which]
    tiers = S.parameter_tiers(model)
    top = {name for i in range(n - k, n) for name, _ in tiers[f"layer.{i}"]}
    before = _snapshot(model)
    torch.manual_seed(123)
    summary = S.apply_model_surgery(model, S.StabilityOptions(reinit_top_k=k))
    after = _snapshot(model)
    assert summary["reinitialised_layers"] == list(range(n - k, n))
    unchanged = {name for name in before if torch.equal(before[name], after[name])}
    assert unchanged >= set(before) - top  # nothing outside the top k moved
    matrices = [name for name in top if before[name].ndim == 2]
    assert matrices and not (set(matrices) & unchanged)  # every weight matrix in the top k was re-drawn
    std = model.config.initializer_range
    for name in matrices:
        assert after[name].std().item() == pytest.approx(std, rel=0.25)
    if which == "minilm":  # pretrained LayerNorm gains are not all 1: re-init resets them to 1
        ln = f"bert.encoder.layer.{n - 1}.output.LayerNorm.weight"
        assert torch.equal(after[ln], torch.ones_like(after[ln])) and not torch.equal(before[ln], after[ln])


def test_reinit_more_layers_than_exist_is_refused():
    with pytest.raises(ValueError, match="only 2"):
        S.apply_model_surgery(_load("tiny-deberta"), S.StabilityOptions(reinit_top_k=3))


def test_bias_correction_first_step_by_hand():
    # one parameter p=1, gradient g=0.5, lr=0.1, betas (0.9, 0.999), eps=1e-8, no weight decay
    # step 1: m = 0.1*0.5 = 0.05, v = 0.001*0.25 = 0.00025
    # AdamW:   m_hat = 0.5, v_hat = 0.25 -> update 0.5/(0.5+1e-8) ~ 1          -> p = 1 - 0.1 = 0.9
    # BertAdam: 0.05/(sqrt(0.00025)+1e-8) = 0.05/0.0158114 = 3.162277          -> p = 1 - 0.3162277
    # the first update is (1-beta1)/sqrt(1-beta2) = 0.1/0.0316228 = 3.1623 times AdamW's
    results = {}
    for flag in (True, False):
        p = nn.Parameter(torch.tensor([1.0], dtype=torch.float64))
        opt = S.make_optimizer([p], 0.1, S.StabilityOptions(bias_correction=flag))
        assert isinstance(opt, torch.optim.AdamW) == flag
        p.grad = torch.tensor([0.5], dtype=torch.float64)
        opt.step()
        results[flag] = 1.0 - p.item()
    assert results[True] == pytest.approx(0.1, abs=1e-7)
    assert results[False] == pytest.approx(0.3162277, abs=1e-6)
    assert results[False] / results[True] == pytest.approx(0.1 / math.sqrt(0.001), rel=1e-6)


def test_no_bias_correction_keeps_decoupled_weight_decay():
    # with a zero gradient both optimisers only apply decay: p <- p * (1 - lr*wd) = 2 * (1 - 0.1*0.5) = 1.9
    for flag in (True, False):
        p = nn.Parameter(torch.tensor([2.0], dtype=torch.float64))
        opt = S.make_optimizer([{"params": [p], "weight_decay": 0.5}], 0.1, S.StabilityOptions(bias_correction=flag))
        p.grad = torch.zeros_like(p)
        opt.step()
        assert p.item() == pytest.approx(1.9)


@pytest.mark.slow
def test_no_bias_correction_trains_a_real_model():
    model = _load("minilm")
    opts = S.StabilityOptions(bias_correction=False)
    before = _snapshot(model)
    opt = S.make_optimizer(S.param_groups(model, 1e-5, 0.01, opts), 1e-5, opts)
    assert isinstance(opt, S.AdamWNoBiasCorrection)
    _step(model, opt)
    name = "classifier.weight"
    assert not torch.equal(before[name], dict(model.named_parameters())[name])


def test_longer_training_multiplies_epochs():
    assert S.scaled_epochs(3, S.StabilityOptions()) == 3
    assert S.scaled_epochs(5, S.StabilityOptions(longer_training=20.0)) == 100  # the paper: 5 -> up to 100
    assert S.scaled_epochs(10, S.StabilityOptions(longer_training=1.1)) == 11  # no float drift to 12
    assert S.scaled_epochs(3, S.StabilityOptions(longer_training=1.5)) == 5  # 4.5 rounded up
    assert S.scaled_epochs(0.5, S.StabilityOptions(longer_training=3.0)) == 1.5


def test_options_are_validated_and_described():
    with pytest.raises(ValueError):
        S.StabilityOptions(layerwise_lr_decay=1.5)
    with pytest.raises(ValueError):
        S.StabilityOptions(reinit_top_k=-1)
    with pytest.raises(ValueError):
        S.StabilityOptions(longer_training=0)
    assert S.StabilityOptions().describe() == [] and not S.StabilityOptions().uses_layers
    notes = S.StabilityOptions(freeze_lower=True, layerwise_lr_decay=0.9, bias_correction=False).describe()
    assert len(notes) == 3 and "0.9" in notes[1]


def test_adamw_takes_the_fused_kernel_on_cpu_and_steps_like_the_plain_one():
    """The fused kernel is several times faster on CPU tensors (see stability.adamw); it must give the same
    update as torch's reference loop."""
    from medibio.training import stability

    torch.manual_seed(0)
    weights = [torch.randn(8, 4), torch.randn(4)]
    grads = [torch.randn_like(w) for w in weights]
    results = []
    for fused in (True, False):
        params = [torch.nn.Parameter(w.clone()) for w in weights]
        for p, g in zip(params, grads, strict=True):
            p.grad = g.clone()
        opt = stability.adamw([{"params": params, "weight_decay": 0.01}], lr=1e-2) if fused else \
            torch.optim.AdamW([{"params": params, "weight_decay": 0.01}], lr=1e-2, foreach=False)
        assert opt.defaults["fused"] is (True if fused else None)
        for _ in range(3):
            opt.step()
        results.append(params)
    for a, b in zip(*results, strict=True):
        assert torch.allclose(a, b, atol=1e-6)
    opts = stability.StabilityOptions()
    assert stability.make_optimizer([torch.nn.Parameter(torch.ones(2))], lr=1e-3, opts=opts).defaults["fused"]


# A value away from the default for each fine-tuning option that sets a stability switch.
SET = {"freeze_lower": True, "llrd": 0.9, "reinit_top": 2, "bias_correction": False, "longer_training": 2.0,
       "head_lr_scale": 100.0}


def test_each_stability_option_is_spelled_once_for_notes_and_variant_names():
    """Every option of :class:`StabilityOptions` has one switch, which the config sets, the record notes and
    the variant name read; ``head_lr_scale`` is noted but not named (a preset of the profiles)."""
    import dataclasses

    from medibio.finetune.variants import variant_name
    from medibio.training.config import FinetuneConfig
    from medibio.training.options import SWITCHES, StabilityOptions

    assert [s.option for s in SWITCHES] == [f.name for f in dataclasses.fields(StabilityOptions)]
    assert [s.config for s in SWITCHES] == list(SET)
    named = {"freeze_lower": "freeze", "llrd": "llrd0.9", "reinit_top": "reinit2", "bias_correction": "nobiascorr",
             "longer_training": "long2", "head_lr_scale": None}
    for option, value in SET.items():
        cfg = FinetuneConfig(**{option: value})
        opts = StabilityOptions.from_config(cfg)
        assert [s.config for s, _ in opts.changed()] == [option]
        assert len(opts.describe()) == 1
        assert variant_name(cfg) == (named[option] or "base")
        assert variant_name(cfg, ["STS-B"]) == "+".join(filter(None, ["ift-STS-B", named[option]]))
    every = FinetuneConfig(**SET, cv_fold=2)
    assert variant_name(every) == "freeze+llrd0.9+reinit2+nobiascorr+long2+cv2"
    assert StabilityOptions.from_config(every).describe() == [
        "freeze embeddings + lower half of the encoder", "layer-wise lr decay 0.9", "re-initialise top 2 layers",
        "Adam without bias correction (BertAdam)", "epochs x2.0", "task head lr x100"]


def test_every_recorded_fine_tuning_run_keeps_its_variant_name_and_stability_notes():
    """The runs recorded in ``reference/``: from each record's configuration and request, the variant name is
    the recorded one and the stability notes are among the record's notes."""
    import json

    from medibio.core.paths import REPO_ROOT
    from medibio.finetune.runner import variant_name
    from medibio.training.config import FinetuneConfig

    records = sorted((REPO_ROOT / "reference" / "finetune").rglob("seed*.json"))
    assert len(records) > 300
    head_scales = set()
    for path in records:
        record = json.loads(path.read_text(encoding="utf-8"))
        fields = {k: v for k, v in record["config"]["hyperparameters"].items() if k != "effective_epochs"}
        cfg = FinetuneConfig().replace(**fields)
        request = record["request"]
        assert variant_name(cfg, request.get("intermediate") or (), request.get("variant")) == record["variant"], path
        notes = S.StabilityOptions.from_config(cfg).describe()
        assert set(notes) <= set(record["notes"]), path
        head_scales.add(cfg.head_lr_scale)
    assert head_scales >= {1.0, 100.0, 500.0}  # runs with and without a scaled head, named alike
