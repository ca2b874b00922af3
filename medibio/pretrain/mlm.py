"""Masked-language-model pieces: models from scratch or from a checkpoint, and the masking collator.

Masking is ``transformers.DataCollatorForLanguageModeling`` (15% of tokens; of those 80% ``[MASK]``, 10%
random, 10% unchanged). Whole-word masking uses the collator's own word grouping, which reads word
boundaries from offsets; packed blocks have no offsets, so they are synthesised from the vocabulary:
a SentencePiece piece starting with "▁" (or a WordPiece token *not* starting with "##") opens a word.
Note that the collator turns off the 10% random replacement when whole-word masking is on.

The masking generator is re-seeded from (seed, micro-batch index) at every call, so the masks of step k
do not depend on what ran before: a resumed run draws exactly the masks an uninterrupted run would.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np

from medibio.models.zoo import load_tokenizer, resolve
from medibio.pretrain.configs import ModelShape, PretrainConfig


def new_model(shape: ModelShape, tokenizer: Any, seed: int = 0):
    """A randomly initialised DeBERTa-v2 masked LM sized by ``shape`` around ``tokenizer``'s vocabulary."""
    import torch
    from transformers import DebertaV2Config, DebertaV2ForMaskedLM

    if shape.hidden % shape.heads:
        raise ValueError(f"hidden size {shape.hidden} is not divisible by {shape.heads} heads")
    config = DebertaV2Config(
        vocab_size=len(tokenizer), hidden_size=shape.hidden, num_hidden_layers=shape.layers,
        num_attention_heads=shape.heads, intermediate_size=shape.intermediate,
        max_position_embeddings=shape.max_position, relative_attention=True, pos_att_type=["p2c", "c2p"],
        position_buckets=shape.position_buckets, max_relative_positions=-1, position_biased_input=False,
        norm_rel_ebd="layer_norm", share_att_key=True, hidden_act="gelu",
        hidden_dropout_prob=shape.dropout, attention_probs_dropout_prob=shape.dropout,
        pad_token_id=tokenizer.pad_token_id, type_vocab_size=0,
    )
    torch.manual_seed(seed)
    return DebertaV2ForMaskedLM(config)


def load_checkpoint(path: str | Path):
    """(masked-LM model, tokenizer) of a checkpoint for continual pretraining; its vocabulary is kept.

    Works for DeBERTa-v2/v3 and BERT-style checkpoints (MiniLM stands in for DeBERTa-v3 here); a checkpoint
    saved without an MLM head (a sentence encoder) gets a freshly initialised head.
    """
    from transformers import AutoModelForMaskedLM

    target = resolve(path)
    tokenizer = load_tokenizer(target)
    model = AutoModelForMaskedLM.from_pretrained(target)
    return model, tokenizer


def continuation_table(tokenizer: Any) -> np.ndarray:
    """Boolean per vocabulary id: True when the token continues the previous word (no word-start marker)."""
    vocab = tokenizer.get_vocab()
    size = max(len(tokenizer), max(vocab.values()) + 1)
    table = np.zeros(size, dtype=bool)
    sentencepiece = any(tok.startswith("\u2581") for tok in list(vocab)[:5000])
    for tok, idx in vocab.items():
        table[idx] = not tok.startswith("\u2581") if sentencepiece else tok.startswith("##")
    for idx in tokenizer.all_special_ids:
        table[idx] = False
    return table


class MLMCollator:
    """Turns a list of packed blocks into a masked batch (``input_ids``, ``attention_mask``, ``labels``)."""

    def __init__(self, tokenizer: Any, config: PretrainConfig) -> None:
        from transformers import DataCollatorForLanguageModeling

        self.tokenizer = tokenizer
        self.whole_word = config.whole_word_mask
        self.inner = DataCollatorForLanguageModeling(
            tokenizer, mlm=True, mlm_probability=config.mlm_probability, whole_word_mask=config.whole_word_mask,
            mask_replace_prob=config.mask_replace_prob, random_replace_prob=config.random_replace_prob,
            return_tensors="pt", seed=config.seed,
        )
        self.special = np.zeros(max(len(tokenizer), max(tokenizer.get_vocab().values()) + 1), dtype=bool)
        self.special[list(tokenizer.all_special_ids)] = True
        self.continuation = continuation_table(tokenizer) if self.whole_word else None

    def _offsets(self, ids: np.ndarray) -> np.ndarray:
        """Fake character offsets whose gaps mark word starts (what the collator's word grouping reads)."""
        starts_word = ~self.continuation[ids]
        ends = np.cumsum(1 + starts_word, axis=1)
        return np.stack([ends - 1, ends], axis=-1)

    def __call__(self, blocks: list[Any] | np.ndarray, mask_seed: int) -> dict[str, Any]:
        """Mask a batch of equal-length blocks (no padding needed, so the collator's masking step is
        called directly on the tensor instead of going through per-example padding)."""
        import torch

        ids = np.asarray(blocks, dtype=np.int64)
        self.inner.generator = torch.Generator().manual_seed(int(mask_seed))
        special = torch.from_numpy(self.special[ids].astype(np.int64))
        offsets = self._offsets(ids) if self.whole_word else None
        # torch.tensor copies: the masking writes into its input, which must not be the caller's array
        input_ids, labels = self.inner.torch_mask_tokens(torch.tensor(ids), special_tokens_mask=special,
                                                         offset_mapping=offsets)
        return {"input_ids": input_ids, "attention_mask": torch.ones_like(input_ids), "labels": labels}


def mask_seed(seed: int, step: int, slot: int, stream: int = 0) -> int:
    """Seed of one micro-batch's randomness (stream 0: masks, 1: dropout): a pure function of its position
    in training (optimizer step, slot = micro-step x processes + rank), never of what ran before."""
    return int.from_bytes(hashlib.blake2b(f"{seed}:{step}:{slot}:{stream}".encode(), digest_size=7).digest(), "big")
