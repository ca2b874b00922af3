"""Masked-language-model pieces: models from scratch or from a checkpoint, and the masking collator.

Masking is ``transformers.DataCollatorForLanguageModeling`` (15% of tokens; of those 80% ``[MASK]``, 10%
random, 10% unchanged). Whole-word masking uses the collator's own word grouping, which reads word
boundaries from offsets; packed blocks have no offsets, so they are synthesised from the vocabulary:
a SentencePiece piece starting with "▁" (or a WordPiece token *not* starting with "##") opens a word.
Note that the collator turns off the 10% random replacement when whole-word masking is on.

The masking generator is re-seeded from (seed, micro-batch index) at every call, so the masks of step k
do not depend on what ran before: a resumed run draws exactly the masks an uninterrupted run would.

The loss projects only the masked positions onto the vocabulary (:class:`MaskedPositionsLM`): transformers'
``...ForMaskedLM.forward`` projects every position and lets the loss ignore the 85% it has no label for.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import torch

from medibio.core.errors import MedibioError
from medibio.models.zoo import load_tokenizer, resolve
from medibio.pretrain.configs import ModelShape, PretrainConfig


def new_model(shape: ModelShape, tokenizer: Any, seed: int = 0):
    """A randomly initialised DeBERTa-v2 masked LM sized by ``shape`` around ``tokenizer``'s vocabulary."""
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


# the output head of a masked LM, by the attribute its family keeps it under, and how it is called
_HEADS = (
    ("lm_predictions", lambda lm, h: lm.lm_predictions(h, lm.base_model.embeddings.word_embeddings)),  # DeBERTa-v2/v3
    ("cls", lambda lm, h: lm.cls(h)),  # BERT (MiniLM), DeBERTa-v2 legacy heads
    ("lm_head", lambda lm, h: lm.lm_head(h)),  # RoBERTa family
)


class MaskedPositionsLM(torch.nn.Module):
    """A Hugging Face masked LM (``.lm``) whose forward returns the MLM loss, with vocabulary logits computed
    at the labelled (masked) positions only.

    The head (dense, activation, layer norm, vocabulary projection) works position by position and the loss
    is the mean over the labelled positions, so gathering their hidden states before the head gives the same
    loss up to float rounding (``tests/test_pretrain_mlm.py``) for about 15% of the head's work: with a 30K
    vocabulary, 4 layers and hidden size 256 the projection alone is 2.4x the encoder's matmul work per token. It is a
    module (not a function over ``.lm``'s parts) so that DistributedDataParallel, which hooks ``forward``,
    wraps it whole; checkpoints hold its state under ``lm.``, and ``.lm`` is what is saved as the model.
    """

    def __init__(self, lm: Any) -> None:
        super().__init__()
        names = [name for name, _ in _HEADS if isinstance(getattr(lm, name, None), torch.nn.Module)]
        if not names:
            raise MedibioError(f"{type(lm).__name__} keeps its masked-LM head under none of "
                               f"{', '.join(n for n, _ in _HEADS)}; the masked-positions loss cannot find it")
        self.lm = lm
        self._head = dict(_HEADS)[names[0]]

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        hidden = self.lm.base_model(input_ids=input_ids, attention_mask=attention_mask)[0]
        labelled = labels != -100
        logits = self._head(self.lm, hidden[labelled])
        return torch.nn.functional.cross_entropy(logits.view(-1, logits.shape[-1]), labels[labelled])
