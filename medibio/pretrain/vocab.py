"""SentencePiece (unigram) vocabularies that ``DebertaV2TokenizerFast.from_pretrained`` loads offline, and
the SumPubMed text form a tokenizer can be given.

SumPubMed is lower-cased, with most numbers replaced by ``<dig>`` (``dc3000`` became ``dc <dig>``, ``cdk-2``
``cdk- <dig>``; ``ca2+`` and ``16s`` kept their digits); BLURB is cased, with its numbers. A tokenizer in the
*SumPubMed form* (:func:`in_sumpubmed_form`) lower-cases its input and turns every run of digits (decimal
points and commas included) and SumPubMed's own ``<dig>`` into `` <dig> ``, in its normaliser: pretraining
text and fine-tuning text then reach the model in one form, whichever corpus they come from, and the form
travels with the saved tokenizer (``tokenizer.json``) to every fine-tuning run, with no change to the data
readers. Such a tokenizer is saved as transformers' generic fast tokenizer: the model-specific classes
rebuild their normaliser from their own recipe when loaded and would drop it.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from medibio.pretrain.corpus import iter_documents, iter_sentences

DIGITS = "<dig>"
TEXT_FORMS = ("as-is", "sumpubmed")  # PretrainConfig.text_form
_NUMBER = r"<dig>|\d+(?:[.,]\d+)*"


def sumpubmed_normalizer():
    """The ``tokenizers`` normaliser of the SumPubMed form: lower case, every number as `` <dig> ``."""
    from tokenizers import Regex, normalizers

    return normalizers.Sequence([normalizers.Lowercase(), normalizers.Replace(Regex(_NUMBER), f" {DIGITS} ")])


def is_sumpubmed_form(tokenizer: Any) -> bool:
    """True when ``tokenizer`` already normalises text to the SumPubMed form."""
    normalizer = tokenizer.backend_tokenizer.normalizer
    return normalizer is not None and DIGITS in normalizer.normalize_str("A7")


def in_sumpubmed_form(tokenizer: Any):
    """A generic fast tokenizer doing what ``tokenizer`` does after normalising to the SumPubMed form (itself
    when it already does); ``<dig>`` becomes a token of its own where the vocabulary would split it (BERT's
    WordPiece: ``<``, ``dig``, ``>``), so a model continued with it needs one more embedding row."""
    from tokenizers import normalizers
    from transformers import PreTrainedTokenizerFast

    if is_sumpubmed_form(tokenizer):
        return tokenizer
    backend = copy.deepcopy(tokenizer.backend_tokenizer)
    own = backend.normalizer
    backend.normalizer = sumpubmed_normalizer() if own is None else normalizers.Sequence([sumpubmed_normalizer(), own])
    special = {name: getattr(tokenizer, name) for name in
               ("cls_token", "sep_token", "pad_token", "unk_token", "mask_token", "bos_token", "eos_token")
               if getattr(tokenizer, name, None) is not None}
    out = PreTrainedTokenizerFast(tokenizer_object=backend, model_max_length=tokenizer.model_max_length, **special)
    if len([p for p in out.tokenize(DIGITS) if p != "\u2581"]) > 1:
        out.add_tokens([DIGITS])
    return out


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
                            max_mb: float | None = 50.0, root: str | Path | None = None, text_form: str = "as-is"):
    """A vocabulary for a corpus spec (see ``medibio.pretrain.corpus``), trained on its first ``max_mb``
    of deduplicated text, one sentence per SentencePiece input line; under ``text_form="sumpubmed"`` it learns
    from the text in that form and the saved tokenizer normalises to it. SentencePiece runs on one thread
    without shuffling there, so the same text gives the same vocabulary files (the run's digest covers them)."""
    if text_form not in TEXT_FORMS:
        raise ValueError(f"text form must be one of {TEXT_FORMS}, got {text_form!r}")
    sentences = iter_sentences(iter_documents(corpus, variant, root, max_mb=max_mb))
    if text_form == "as-is":
        return train_tokenizer(sentences, out_dir, vocab_size=vocab_size)
    normalise = sumpubmed_normalizer().normalize_str
    tokenizer = train_tokenizer((normalise(s) for s in sentences), out_dir, vocab_size=vocab_size, num_threads=1,
                                shuffle_input_sentence=False)
    tokenizer = in_sumpubmed_form(tokenizer)
    tokenizer.save_pretrained(str(out_dir))
    return tokenizer
