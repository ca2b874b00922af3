"""Masked-LM pieces: 15% / 80-10-10 masking, whole-word masking, determinism, the masked-positions loss,
one step lowers the loss."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from medibio.pretrain.configs import ModelShape, get_config
from medibio.pretrain.mlm import MaskedPositionsLM, MLMCollator, continuation_table, new_model
from medibio.pretrain.vocab import train_tokenizer

FIX = Path(__file__).parent / "fixtures" / "pretrain"
WORDS = [
    "the", "patient", "kidney", "liver", "insulin", "glucose", "protein", "receptor", "expression",
    "tumour", "cells", "blood", "heart", "therapy", "dose", "response", "mutation", "pathway",
    "infection", "antibody",
]


@pytest.fixture(scope="module")
def tok(tmp_path_factory):
    rng = np.random.default_rng(0)
    sentences = [" ".join(rng.choice(WORDS, size=10)) + "." for _ in range(400)]
    return train_tokenizer(sentences, tmp_path_factory.mktemp("tok"), vocab_size=45)


def _blocks(tok, n: int = 64, length: int = 64) -> np.ndarray:
    rng = np.random.default_rng(1)
    text = " ".join(rng.choice(WORDS, size=4000))
    ids = tok(text, add_special_tokens=False)["input_ids"]
    body = length - 2
    return np.array([[tok.cls_token_id, *ids[i * body:(i + 1) * body], tok.sep_token_id] for i in range(n)])


def test_masking_rates_and_labels(tok):
    blocks = _blocks(tok)
    batch = MLMCollator(tok, get_config("smoke"))(blocks, mask_seed=3)
    labels, inputs = batch["labels"].numpy(), batch["input_ids"].numpy()
    masked = labels != -100
    assert 0.12 < masked[:, 1:-1].mean() < 0.18  # 15% of ordinary tokens
    assert not masked[:, 0].any() and not masked[:, -1].any()  # [CLS]/[SEP] never masked
    assert (labels[masked] == blocks[masked]).all()  # labels are the original ids
    as_mask = inputs[masked] == tok.mask_token_id
    unchanged = inputs[masked] == blocks[masked]
    assert 0.74 < as_mask.mean() < 0.86  # 80% [MASK]
    assert 0.05 < unchanged.mean() < 0.16  # 10% kept (plus random hits of the same id)
    assert (inputs[~masked] == blocks[~masked]).all()
    assert batch["attention_mask"].numpy().all()


def test_masks_are_a_function_of_the_seed(tok):
    blocks = _blocks(tok, n=8)
    col = MLMCollator(tok, get_config("smoke"))
    a, b, c = col(blocks, 11), col(blocks, 11), col(blocks, 12)
    assert (a["labels"] == b["labels"]).all() and (a["input_ids"] == b["input_ids"]).all()
    assert not (a["labels"] == c["labels"]).all()


def test_whole_word_masking_masks_all_pieces_of_a_word(tok):
    blocks = _blocks(tok, n=32)
    cfg = get_config("smoke").with_overrides(whole_word_mask=True)
    with pytest.warns(UserWarning, match="Random token replacement"):
        col = MLMCollator(tok, cfg)
    labels = col(blocks, 5)["labels"].numpy()
    cont = continuation_table(tok)
    checked = 0
    for row, lab in zip(blocks, labels, strict=True):
        word, words = [], []
        for i, t in enumerate(row[1:-1], start=1):
            if not cont[t] and word:
                words.append(word)
                word = []
            word.append(i)
        for w in words:
            if len(w) > 1:
                flags = {lab[i] != -100 for i in w}
                assert len(flags) == 1  # all pieces masked or none
                checked += 1
    assert checked > 20


def test_word_start_tables_for_sentencepiece_and_wordpiece(tok):
    from medibio.models.zoo import load_tokenizer

    cont = continuation_table(tok)
    pieces = tok.tokenize("the tumour")
    assert not cont[tok.convert_tokens_to_ids(pieces[0])]
    bert = load_tokenizer("minilm")
    bcont = continuation_table(bert)
    assert bcont[bert.convert_tokens_to_ids("##ing")] and not bcont[bert.convert_tokens_to_ids("the")]


@pytest.mark.slow
def test_a_few_steps_on_a_fixed_batch_lower_the_loss(tok):
    import torch

    torch.manual_seed(0)
    shape = ModelShape(layers=1, hidden=32, heads=2, intermediate=64, vocab_size=45, max_position=64,
                       position_buckets=16, dropout=0.0)
    model = new_model(shape, tok, seed=0)
    batch = MLMCollator(tok, get_config("smoke"))(_blocks(tok, n=8), mask_seed=1)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(5):
        loss = model(**batch).loss
        losses.append(loss.item())
        loss.backward()
        opt.step()
        opt.zero_grad()
    assert losses[0] == pytest.approx(np.log(len(tok)), rel=0.15)  # random init: uniform over the vocabulary
    assert losses[1] < losses[0] and losses[-1] < losses[0] - 0.3


def _tiny_shape(vocab: int) -> ModelShape:
    return ModelShape(layers=1, hidden=32, heads=2, intermediate=64, vocab_size=vocab, max_position=64,
                      position_buckets=16, dropout=0.0)


def _full_and_masked(model, batch):
    """(loss, gradients) of transformers' all-positions forward and of :class:`MaskedPositionsLM`."""
    out = []
    for forward in (lambda: model(**batch).loss, lambda: MaskedPositionsLM(model)(**batch)):
        model.zero_grad(set_to_none=True)
        loss = forward()
        loss.backward()
        out.append((loss.item(), {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}))
    return out


@pytest.mark.parametrize("legacy", [True, False], ids=["deberta-legacy-head", "deberta-v3-head"])
def test_masked_positions_loss_equals_the_full_logits_loss(tok, legacy):
    import torch

    model = new_model(_tiny_shape(len(tok)), tok, seed=0)
    if not legacy:  # the head DeBERTa-v3 checkpoints load into (lm_predictions, tied to the embeddings)
        model.config.legacy = False
        model = type(model)(model.config)
    assert hasattr(model, "cls" if legacy else "lm_predictions")
    batch = MLMCollator(tok, get_config("smoke"))(_blocks(tok, n=8), mask_seed=2)
    (full, full_grads), (masked, masked_grads) = _full_and_masked(model, batch)
    assert masked == pytest.approx(full, rel=1e-6)
    assert full_grads.keys() == masked_grads.keys() and len(full_grads) > 10
    for name, grad in full_grads.items():
        assert torch.allclose(masked_grads[name], grad, rtol=1e-4, atol=1e-6), name


def test_masked_positions_loss_on_minilm_with_its_fresh_head():
    import torch

    from medibio.pretrain.mlm import load_checkpoint

    model, bert = load_checkpoint("minilm")
    model.eval()  # dropout off: both forwards see the same network
    torch.manual_seed(0)
    ids = torch.randint(1000, len(bert), (2, 24))
    labels = torch.where(torch.rand(ids.shape) < 0.2, ids, torch.full_like(ids, -100))
    batch = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": labels}
    (full, _), (masked, _) = _full_and_masked(model, batch)
    assert masked == pytest.approx(full, rel=1e-5)


def test_a_model_without_a_known_head_is_refused():
    import torch

    from medibio.core.errors import MedibioError

    with pytest.raises(MedibioError, match="Linear keeps its masked-LM head under none of"):
        MaskedPositionsLM(torch.nn.Linear(2, 2))
