"""The tiny test model: a 2-layer random DeBERTa-v2 around a SentencePiece vocabulary shipped in the package.

The vocabulary (``tiny_spm.model``, 2,000 unigram pieces) was trained once on 1,000 SumPubMed abstracts,
single-threaded and unshuffled; shipping it lets every test that needs a real tokenizer and a DeBERTa-v2
forward pass run on a clean checkout without the data root. The weights are drawn from a private fork of
torch's generator seeded with 0, so every build gives the same bytes (its fingerprint names the model across
machines and cold caches) and building leaves the caller's random state alone.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from medibio.core.atomic import publish_folder
from medibio.core.paths import cache_root as resolve_cache_root

NAME = "tiny-deberta"
VOCABULARY = Path(__file__).with_name("tiny_spm.model")
# Bumped whenever the tiny model's recipe changes, so that an older build in a cache is never reused.
RECIPE = 2
SHAPE = {"vocab_size": 2000, "hidden": 64, "layers": 2, "heads": 2, "max_position": 512}


def folder_name() -> str:
    return f"{NAME}-v{SHAPE['vocab_size']}-h{SHAPE['hidden']}-l{SHAPE['layers']}-r{RECIPE}"


def is_build(folder: Path) -> bool:
    """Whether ``folder`` is a build of this model (the name every build gets)."""
    return folder.name == folder_name()


def build(cache_root: str | Path | None = None, out_dir: str | Path | None = None) -> Path:
    """Build the tiny model once into ``<cache_root>/<folder_name()>`` (or ``out_dir``); return its folder.

    Processes building together build it once (:func:`medibio.core.atomic.publish_folder`): nobody sees a
    half-built model.
    """
    out = Path(out_dir) if out_dir else resolve_cache_root(cache_root) / folder_name()
    return publish_folder(out, _build, complete=_complete)


def _complete(folder: Path) -> bool:
    return all((folder / name).is_file() for name in ("config.json", "spm.model", "model.safetensors"))


def _build(folder: Path) -> None:
    import torch
    from transformers import DebertaV2Config, DebertaV2ForMaskedLM, DebertaV2TokenizerFast

    shutil.copyfile(VOCABULARY, folder / "spm.model")
    tok = DebertaV2TokenizerFast.from_pretrained(str(folder))
    tok.save_pretrained(str(folder))
    hidden = SHAPE["hidden"]
    config = DebertaV2Config(
        vocab_size=len(tok), hidden_size=hidden, num_hidden_layers=SHAPE["layers"],
        num_attention_heads=SHAPE["heads"], intermediate_size=hidden * 4, max_position_embeddings=SHAPE["max_position"],
        relative_attention=True, pos_att_type=["p2c", "c2p"], position_buckets=64, max_relative_positions=-1,
        pad_token_id=tok.pad_token_id, position_biased_input=False, hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        DebertaV2ForMaskedLM(config).save_pretrained(str(folder))  # writes config.json + model.safetensors
