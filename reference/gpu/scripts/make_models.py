"""Build random-weight encoders of the paper's shapes into folders that medibio.models.zoo loads as is.

    python .gpu/make_models.py OUT_DIR [--tiny]

Writes OUT_DIR/{minilm-shape,bert-base-shape,deberta-v3-base-shape}: config.json, model.safetensors (fp32,
random init, seed 0) and tokenizer files. Throughput and MFU do not depend on the weights; scores would.
--tiny shrinks every shape (2 layers, hidden 64) for a quick CPU check of the code path.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BERT_TOKENIZER = HERE / "tok_minilm"  # the packaged MiniLM's uncased WordPiece (30,522 entries)
SPM = HERE / "spm.model"  # medibio/models/tiny_spm.model (2,000 unigram pieces)

SHAPES = {
    # all-MiniLM-L6-v2's own config (6 layers, hidden 384, 12 heads)
    "minilm-shape": {"kind": "bert", "layers": 6, "hidden": 384, "heads": 12, "intermediate": 1536},
    # PubMedBERT / BERT-base (vocabulary: the WordPiece above, 30,522; PubMedBERT's own is about the same size)
    "bert-base-shape": {"kind": "bert", "layers": 12, "hidden": 768, "heads": 12, "intermediate": 3072},
    # DeBERTa-v3-base: relative attention, 256 position buckets, 128,100-entry embedding table
    "deberta-v3-base-shape": {"kind": "deberta", "layers": 12, "hidden": 768, "heads": 12, "intermediate": 3072,
                              "vocab": 128_100},
}


def build(out: Path, tiny: bool = False) -> dict:
    import torch
    from transformers import BertConfig, BertModel, DebertaV2Config, DebertaV2Model, DebertaV2TokenizerFast

    made = {}
    for name, s in SHAPES.items():
        t0 = time.perf_counter()
        folder = out / name
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        layers, hidden, heads, inter = ((2, 64, 2, 128) if tiny else
                                        (s["layers"], s["hidden"], s["heads"], s["intermediate"]))
        if s["kind"] == "bert":
            for f in BERT_TOKENIZER.iterdir():
                shutil.copyfile(f, folder / f.name)
            config = BertConfig(vocab_size=30522, hidden_size=hidden, num_hidden_layers=layers,
                                num_attention_heads=heads, intermediate_size=inter, max_position_embeddings=512,
                                type_vocab_size=2, pad_token_id=0, hidden_act="gelu")
            cls = BertModel
        else:
            shutil.copyfile(SPM, folder / "spm.model")
            tok = DebertaV2TokenizerFast.from_pretrained(str(folder))
            tok.save_pretrained(str(folder))
            config = DebertaV2Config(
                vocab_size=2000 if tiny else s["vocab"], hidden_size=hidden, num_hidden_layers=layers,
                num_attention_heads=heads, intermediate_size=inter, max_position_embeddings=512,
                relative_attention=True, pos_att_type=["p2c", "c2p"], position_buckets=256,
                max_relative_positions=-1, position_biased_input=False, norm_rel_ebd="layer_norm",
                share_att_key=True, hidden_act="gelu", pad_token_id=tok.pad_token_id, type_vocab_size=0,
                layer_norm_eps=1e-7)
            cls = DebertaV2Model
        torch.manual_seed(0)
        model = cls(config)
        model.save_pretrained(str(folder))
        n = sum(p.numel() for p in model.parameters())
        made[name] = {"folder": str(folder), "parameters": n, "layers": layers, "hidden": hidden,
                      "vocab_size": config.vocab_size, "build_s": round(time.perf_counter() - t0, 1)}
        print(f"built {name}: {n / 1e6:.1f} M parameters in {made[name]['build_s']} s -> {folder}", flush=True)
    (out / "models.json").write_text(json.dumps(made, indent=2))
    return made


if __name__ == "__main__":
    build(Path(sys.argv[1]), tiny="--tiny" in sys.argv[2:])
