"""A real Hugging Face cache, built offline from local models, under the paper's hub names.

Users' models arrive through the standard cache (``$HF_HOME/hub/models--org--name/`` with content-addressed
``blobs/``, ``snapshots/<revision>/`` of relative symlinks into them and ``refs/main`` naming the revision),
which ``from_pretrained`` reads with ``HF_HUB_OFFLINE=1``. Tests and CI lay one out here so that loading
the paper's models by hub name is exercised end to end without the hub:

* the packaged MiniLM (a BERT) as ``michiyasunaga/BioLinkBERT-base`` and
  ``microsoft/BiomedNLP-BiomedBERT-base-uncased-abstract``;
* the tiny DeBERTa-v2 in the DeBERTa-v3 hub layout (``spm.model`` and a two-key ``tokenizer_config.json``,
  no ``tokenizer.json``: the fast tokenizer is converted from SentencePiece on load) as
  ``microsoft/deberta-v3-base`` and ``KISTI-AI/Scideberta-full``.

    python -m tests.support.hub_cache /tmp/hf     # then HF_HOME=/tmp/hf HF_HUB_OFFLINE=1 medibio ...
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Iterable
from pathlib import Path

from medibio.core.settings import Settings
from medibio.models import zoo
from medibio.models.tiny import build as build_tiny

BERT_NAMES = ("michiyasunaga/BioLinkBERT-base", "microsoft/BiomedNLP-BiomedBERT-base-uncased-abstract")
DEBERTA_V3_NAMES = ("microsoft/deberta-v3-base", "KISTI-AI/Scideberta-full")
HUB_NAMES = BERT_NAMES + DEBERTA_V3_NAMES
# microsoft/deberta-v3-base's own tokenizer_config.json: the tokenizer class comes from config.json.
DEBERTA_V3_TOKENIZER_CONFIG = {"do_lower_case": False, "vocab_type": "spm"}


def _bert_files() -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in zoo.model_files(zoo.minilm_path())}


def _deberta_v3_files(cache_root: str | Path | None) -> dict[str, bytes]:
    tiny = build_tiny(cache_root)
    files = {name: (tiny / name).read_bytes() for name in ("config.json", "model.safetensors", "spm.model")}
    files["tokenizer_config.json"] = (json.dumps(DEBERTA_V3_TOKENIZER_CONFIG, indent=2) + "\n").encode()
    return files


def repo_folder(hf_home: str | Path, repo_id: str) -> Path:
    """``$HF_HOME/hub/models--org--name``: where the hub client caches ``repo_id``."""
    return Path(hf_home) / "hub" / ("models--" + repo_id.replace("/", "--"))


def add_model(hf_home: str | Path, repo_id: str, files: dict[str, bytes]) -> Path:
    """Cache ``files`` as ``repo_id`` at a revision derived from their content; return the snapshot folder.

    Blobs are named by their sha256 (as the hub names LFS files) and linked from the snapshot by relative
    symlinks, exactly as ``huggingface_hub`` lays out a download; ``refs/main`` points at the revision.
    """
    repo = repo_folder(hf_home, repo_id)
    digests = {name: hashlib.sha256(data).hexdigest() for name, data in files.items()}
    revision = hashlib.sha1(json.dumps(sorted(digests.items())).encode()).hexdigest()
    snapshot = repo / "snapshots" / revision
    (repo / "blobs").mkdir(parents=True, exist_ok=True)
    snapshot.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        blob = repo / "blobs" / digests[name]
        if not blob.is_file():
            tmp = blob.with_name(blob.name + ".incomplete")
            tmp.write_bytes(data)
            os.replace(tmp, blob)
        link = snapshot / name
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(os.path.relpath(blob, snapshot))
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(revision, encoding="utf-8")  # the hub client writes no newline
    return snapshot


def make_hub_cache(hf_home: str | Path, names: Iterable[str] = HUB_NAMES,
                   cache_root: str | Path | None = None) -> dict[str, Path]:
    """Lay out ``names`` (default: the four paper models) in a Hugging Face cache under ``hf_home``
    (the tiny DeBERTa-v2 the DeBERTa names stand for is built in ``cache_root``).

    Returns {hub name: snapshot folder}. Point ``HF_HOME`` at ``hf_home`` (and set ``HF_HUB_OFFLINE=1``)
    before ``huggingface_hub``/``transformers`` are imported: both read the cache location at import.
    """
    names = list(names)
    unknown = sorted(set(names) - set(HUB_NAMES))
    if unknown:
        raise ValueError(f"no local stand-in for {unknown}; known: {', '.join(HUB_NAMES)}")
    material: dict[str, dict[str, bytes]] = {}
    snapshots = {}
    for name in names:
        kind = "bert" if name in BERT_NAMES else "deberta-v3"
        if kind not in material:
            material[kind] = _bert_files() if kind == "bert" else _deberta_v3_files(cache_root)
        snapshots[name] = add_model(hf_home, name, material[kind])
    return snapshots


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m tests.support.hub_cache HF_HOME")
    for hub_name, folder in make_hub_cache(sys.argv[1], cache_root=Settings.from_env().cache_root).items():
        print(f"{hub_name}\t{folder}")
