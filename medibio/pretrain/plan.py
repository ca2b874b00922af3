"""The identity of a pretraining run: a digest of everything that decides the model it produces.

A run is planned before anything is trained (:func:`plan_pretraining`): the effective configuration (after
``--limit`` and overrides), the corpus (named corpora by name) and the checksums of the files it reads, the
starting point (a model's fingerprint: config, weights, tokenizer) or the vocabulary files it is given, and
the numeric precision this machine will use. Its digest names the run's record,
``<results_root>/pretrain/<config>/<start>/<tag>/<corpus>/<digest>/seed<N>.json``, whose artifacts (the model,
its checkpoints) sit in ``seed<N>/`` beside it: the same configuration finds (and resumes, or reuses) its own
run; a changed one trains into a new record and leaves the old one alone.

Left out, because they do not change the model: how many checkpoints are kept and how often, how often the
curve is logged, the held-out evaluation at the end, the description, and the per-device batch (the data,
masks and dropout of a step depend on an example's slot in the effective batch only, so 2 x 4 per device and
1 x 8 train on the same examples).
Fields added to the configuration later (``LATER_FIELDS``) count only where they differ from the value that
runs before them implied.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from medibio.core.hashing import files_fingerprint
from medibio.core.precision import precision_for
from medibio.core.settings import Settings
from medibio.models import zoo
from medibio.pretrain.configs import ModelShape, PretrainConfig, for_run, get_config
from medibio.pretrain.corpus import NAMED_CORPORA, corpus_files
from medibio.runs import protocol
from medibio.runs.protocol import Plan

KIND = "pretrain"
NOT_IDENTITY = ("description", "save_every", "keep_checkpoints", "log_every", "per_device_batch", "heldout_per_set")
# fields added after runs were recorded: at these values they are left out of the identity, so that those
# runs keep their digests (and recorded results stay current)
LATER_FIELDS = {"text_form": "as-is", "head_warmup_steps": 0}
SCRATCH = "scratch"  # the model tag of a run from scratch


@dataclass(frozen=True)
class Job:
    """What training a planned pretraining run needs."""

    config: PretrainConfig
    corpus: str
    variant: str
    init: str | None  # a model name or folder to continue from; None: from scratch
    tokenizer_dir: str | None
    tag: str
    notes: tuple[str, ...] = ()


def effective_config(config: PretrainConfig | str, max_steps: int | None = None,
                     effective_batch: int | None = None, per_device_batch: int | None = None,
                     limit: int | None = None) -> PretrainConfig:
    """The config a run trains with: the named one under ``limit``, with the command line's overrides."""
    cfg = for_run(get_config(config) if isinstance(config, str) else config, limit)
    return cfg.with_overrides(max_steps=max_steps, effective_batch=effective_batch,
                              per_device_batch=per_device_batch)


def _sources(corpus: str) -> list[str]:
    """A corpus spec without its locations: named corpora by name, given files and folders as ``files``
    (their checksums say what they hold), in the order they are interleaved."""
    return [p if p in NAMED_CORPORA else "files" for p in (x.strip() for x in corpus.split(",")) if p]


def corpus_label(corpus: str) -> str:
    """The corpus as one path-safe name in the record's location (``biomed-abstracts``, ``files``)."""
    return re.sub(r"[^A-Za-z0-9._+-]+", "_", "+".join(_sources(corpus))) or "files"


def _departures(config: PretrainConfig, overrides: dict[str, Any], limit: int | None) -> dict[str, Any]:
    """The fields where ``config`` departs from its named configuration under ``overrides`` and ``limit``
    (a config built in code rather than by name): the request keeps them to plan the same run again."""
    name = config.name.split("-limit")[0]
    try:
        named = effective_config(name, limit=limit, **overrides).to_dict()
    except KeyError:  # a configuration of its own name
        return {k: v for k, v in config.to_dict().items() if k != "name"}
    return {k: v for k, v in config.to_dict().items() if k != "name" and named.get(k) != v}


def rebuild_config(request: dict[str, Any]) -> PretrainConfig:
    """The configuration a pretraining request names (named config, command-line overrides, limit, and the
    fields it departs in)."""
    fields = dict(request.get("fields") or {})
    if "model" in fields:
        fields["model"] = ModelShape(**fields["model"])
    if "adam_betas" in fields:
        fields["adam_betas"] = tuple(fields["adam_betas"])
    try:
        base = effective_config(request["config"], limit=request.get("limit"), **(request.get("overrides") or {}))
    except KeyError:
        return PretrainConfig(name=request["config"], **fields)
    return replace(base, **fields) if fields else base


def plan_pretraining(config: PretrainConfig, corpus: str = "biomed-abstracts", variant: str = "abstract",
                     init: str | Path | None = None, tokenizer_dir: str | Path | None = None, tag: str = "custom",
                     settings: Settings | None = None, overrides: dict[str, Any] | None = None,
                     notes: tuple[str, ...] = ()) -> Plan:
    """Plan a run of the effective ``config`` (see :func:`effective_config`; ``overrides`` are the command
    line's, kept in the request); nothing is trained."""
    settings = settings or Settings()
    overrides = {k: v for k, v in (overrides or {}).items() if v is not None}
    settings_part = {k: v for k, v in config.to_dict().items()
                     if k not in NOT_IDENTITY and not (k in LATER_FIELDS and v == LATER_FIELDS[k])}
    init_text = None if init is None else str(init)
    vocabulary = None
    if init_text is None and tokenizer_dir is not None:
        folder = Path(tokenizer_dir)
        vocabulary = files_fingerprint(
            [folder / name for name in zoo.TOKENIZER_FILES if (folder / name).is_file()], root=folder)
    configuration = {
        "config": settings_part, "precision": precision_for(requested=config.mixed_precision),
        "corpus": {"sources": _sources(corpus), "variant": variant,
                   "files": files_fingerprint(corpus_files(corpus, settings.data_root), root=settings.data_root)},
        "init": None if init_text is None else zoo.fingerprint(init_text, settings.cache_root),
        "vocabulary": vocabulary,
    }
    request = {"config": config.name.split("-limit")[0], "overrides": overrides,
               "fields": _departures(config, overrides, settings.limit), "limit": settings.limit, "corpus": corpus, "variant": variant, "init": init_text,
               "tokenizer_dir": None if tokenizer_dir is None else str(tokenizer_dir), "tag": tag}
    start = SCRATCH if init_text is None else zoo.model_tag(init_text)
    job = Job(config, corpus, variant, init_text, None if tokenizer_dir is None else str(tokenizer_dir), tag,
              tuple(notes))
    return protocol.plan(KIND, config.name, start, tag, corpus_label(corpus), config.seed, configuration, request,
                         f"pretrain {config.name}/{tag}", job, machine=("precision",))
