"""SentencePiece (unigram) vocabularies that ``DebertaV2TokenizerFast.from_pretrained`` loads offline."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from medibio.pretrain.corpus import iter_documents, iter_sentences


def train_sentencepiece(texts: Iterable[str], out_dir: str | Path, vocab_size: int = 32000,
                        model_type: str = "unigram", character_coverage: float = 0.9999,
                        input_sentence_size: int = 2_000_000, **spm_options: Any) -> Path:
    """Train ``spm.model`` in ``out_dir`` with DeBERTa-v2's special-token ids ([PAD]=0 [CLS]=1 [SEP]=2 [UNK]=3).

    ``spm_options`` go to ``SentencePieceTrainer.train`` as they are and override the defaults here (e.g.
    ``num_threads=1, shuffle_input_sentence=False`` for a byte-identical model on every build)."""
    import sentencepiece as spm

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    options: dict[str, Any] = {
        "model_prefix": str(out / "spm"), "vocab_size": vocab_size, "model_type": model_type,
        "character_coverage": character_coverage, "input_sentence_size": input_sentence_size,
        "shuffle_input_sentence": True,
        "pad_id": 0, "bos_id": 1, "eos_id": 2, "unk_id": 3,
        "pad_piece": "[PAD]", "bos_piece": "[CLS]", "eos_piece": "[SEP]", "unk_piece": "[UNK]",
        "user_defined_symbols": ["[MASK]"], "hard_vocab_limit": False, "minloglevel": 2,
    }
    options.update(spm_options)
    spm.SentencePieceTrainer.train(sentence_iterator=iter(t for t in texts if t and t.strip()), **options)
    return out / "spm.model"


def train_tokenizer(texts: Iterable[str], out_dir: str | Path, vocab_size: int = 32000, **kwargs):
    """Train the SentencePiece model and save a complete tokenizer folder (``spm.model`` + ``tokenizer.json``).

    The folder then loads offline with ``DebertaV2TokenizerFast.from_pretrained(out_dir)`` or
    ``AutoTokenizer.from_pretrained(out_dir)``; returns the loaded tokenizer.
    """
    from transformers import DebertaV2TokenizerFast

    out = Path(out_dir)
    train_sentencepiece(texts, out, vocab_size=vocab_size, **kwargs)
    tokenizer = DebertaV2TokenizerFast.from_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    return tokenizer


def train_corpus_vocabulary(corpus: str, out_dir: str | Path, vocab_size: int, variant: str = "abstract",
                            max_mb: float | None = 50.0, root: str | Path | None = None):
    """A vocabulary for a corpus spec (see ``medibio.pretrain.corpus``), trained on its first ``max_mb``
    of deduplicated text, one sentence per SentencePiece input line."""
    docs = iter_documents(corpus, variant, root, max_mb=max_mb)
    return train_tokenizer(iter_sentences(docs), out_dir, vocab_size=vocab_size)
