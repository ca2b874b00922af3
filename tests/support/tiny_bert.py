"""A second tiny test model, of another family than the tiny DeBERTa: a 2-layer random BERT around MiniLM's
WordPiece vocabulary (the packaged all-MiniLM-L6-v2's tokenizer files), for tests that build the book for a
model the profile's presets were not made for (``medibio book --model FOLDER``)."""

from __future__ import annotations

import shutil
from pathlib import Path

from medibio.models import zoo

NAME = "tiny-bert-test"
TOKENIZER_FILES = ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


def build(parent: Path) -> Path:
    """Write the model into ``parent/tiny-bert-test`` (seeded: the same bytes every time) and return it."""
    import torch
    from transformers import BertConfig, BertForMaskedLM

    folder = Path(parent) / NAME
    folder.mkdir(parents=True, exist_ok=True)
    for name in TOKENIZER_FILES:
        source = zoo.minilm_path() / name
        if source.is_file():
            shutil.copyfile(source, folder / name)
    config = BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=512)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        BertForMaskedLM(config).save_pretrained(str(folder))
    return folder
