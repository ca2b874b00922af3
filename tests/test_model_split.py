"""An encoder split into a frozen part run once per input and the top layers run at every call
(:mod:`medibio.models.split`): same outputs as the whole encoder, the frozen part computed once per key and
without dropout, gradients only above the split."""

from __future__ import annotations

import pytest
import torch

from medibio.core.errors import MedibioError
from medibio.models.split import FrozenBottom


def _bert(layers: int = 4, dropout: float = 0.1):
    from transformers import BertConfig, BertModel

    config = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=layers, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=64, hidden_dropout_prob=dropout,
                        attention_probs_dropout_prob=dropout)
    return BertModel(config, add_pooling_layer=False)


def _deberta(layers: int = 3, conv: int = 0):
    from transformers import DebertaV2Config, DebertaV2Model

    config = DebertaV2Config(vocab_size=100, hidden_size=32, num_hidden_layers=layers, num_attention_heads=2,
                             intermediate_size=64, max_position_embeddings=64, relative_attention=True,
                             position_buckets=16, pos_att_type=["p2c", "c2p"], conv_kernel_size=conv)
    return DebertaV2Model(config)


def _batch() -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    ids = torch.randint(5, 100, (3, 12))
    mask = torch.ones_like(ids)
    mask[1, 7:] = 0
    mask[2, 4:] = 0
    return ids.masked_fill(mask == 0, 0), mask


@pytest.mark.parametrize("build", [_bert, _deberta], ids=["bert", "deberta-v2"])
def test_split_encoder_gives_the_whole_encoders_output(build) -> None:
    """In eval mode (no dropout anywhere) the top layers over the kept output of the frozen part equal the
    whole encoder at every real token, for a batch whose rows have different lengths."""
    encoder = build().eval()
    ids, mask = _batch()
    split = FrozenBottom(encoder, 1)
    with torch.no_grad():
        whole = encoder(input_ids=ids, attention_mask=mask).last_hidden_state
        parts = split(["a", "b", "c"], ids, mask)
    real = mask.bool()
    assert parts.shape == whole.shape
    torch.testing.assert_close(parts[real], whole[real], atol=1e-5, rtol=1e-5)


def test_the_frozen_part_runs_once_per_key_without_dropout_and_leaves_the_modes_as_they_were() -> None:
    encoder = _bert(dropout=0.5)
    encoder.train()
    ids, mask = _batch()
    split = FrozenBottom(encoder, 2)
    split(["a", "b", "c"], ids, mask)
    assert split.bottom_rows == 3
    split(["c", "b", "d"], ids, mask)  # one new key: one more row computed
    assert split.bottom_rows == 4
    assert all(m.training for m in encoder.modules())  # the caller's training mode is back
    kept = split.cache["a"]
    with torch.no_grad():
        encoder.eval()
        bottom = FrozenBottom(encoder, 2).bottom(input_ids=ids[:1], attention_mask=mask[:1]).last_hidden_state[0]
    torch.testing.assert_close(kept, bottom)  # computed in eval mode although the encoder was training


def test_gradients_reach_only_the_layers_above_the_split_and_the_state_dict_is_unchanged() -> None:
    encoder = _bert()
    keys = set(encoder.state_dict())
    ids, mask = _batch()
    split = FrozenBottom(encoder, 1)
    split(["a", "b", "c"], ids, mask).sum().backward()
    grads = {n for n, p in encoder.named_parameters() if p.grad is not None}
    assert grads and all(n.startswith("encoder.layer.3.") for n in grads)
    assert set(encoder.state_dict()) == keys  # the views are not registered as submodules


def test_what_cannot_be_split_is_refused() -> None:
    with pytest.raises(MedibioError, match="convolution"):
        FrozenBottom(_deberta(conv=3), 1)
    for top in (0, 4):
        with pytest.raises(MedibioError, match="cannot split 4 layers"):
            FrozenBottom(_bert(4), top)
    with pytest.raises(ValueError, match="2 keys for 3 rows"):
        FrozenBottom(_bert(), 1)(["a", "b"], *_batch())
