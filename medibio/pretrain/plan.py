"""The identity of a pretraining run: a digest of everything that decides the model it produces.

A run is planned before anything is trained (:func:`plan_pretraining`): the effective configuration (after
``--limit`` and overrides), the corpus (named corpora by name) and the checksums of the files it reads, the
starting point (a model's fingerprint: config, weights, tokenizer) or the vocabulary files it is given, the
numeric precision this machine will use, and the ``--limit``. Its digest (:func:`medibio.runs.identity.digest`)
names the run's folder, ``<results_root>/pretrain/<config>/<tag>/<digest>/``: the same configuration finds
(and resumes, or reuses) its own folder; a changed one trains into a new folder and leaves the old one alone.

Left out, because they do not change the model: where checkpoints go and how many are kept, how often the
curve is logged, the description, and the per-device batch (the data, masks and dropout of a step depend on
an example's slot in the effective batch only, so 2 x 4 per device and 1 x 8 train on the same examples).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from medibio.pretrain.configs import PretrainConfig, for_run, get_config
from medibio.runs import identity

# Bump when a code change alters what a given configuration trains, so older runs are not taken for it.
PROTOCOL = 1
NOT_IDENTITY = ("description", "save_every", "keep_checkpoints", "log_every", "per_device_batch")


@dataclass(frozen=True)
class PretrainPlan:
    """One pretraining run, resolved: the config it trains with and the digest its folder is named by."""

    config: PretrainConfig
    corpus: str
    variant: str
    init: str | None
    tokenizer_dir: str | None
    tag: str
    payload: dict[str, Any]
    digest: str

    def folder(self, results_root: str | Path) -> Path:
        """``<results_root>/pretrain/<config>/<tag>/<digest>``: where this run's checkpoints, model and
        ``run.json`` live."""
        return Path(results_root) / "pretrain" / self.config.name / self.tag / self.digest


def effective_config(config: PretrainConfig | str, max_steps: int | None = None,
                     effective_batch: int | None = None, per_device_batch: int | None = None) -> PretrainConfig:
    """The config a run trains with: the named one under ``--limit``, with the command line's overrides."""
    cfg = for_run(get_config(config) if isinstance(config, str) else config)
    return cfg.with_overrides(max_steps=max_steps, effective_batch=effective_batch,
                              per_device_batch=per_device_batch)


def _sources(corpus: str) -> list[str]:
    """A corpus spec without its locations: named corpora by name, given files and folders as ``files``
    (their checksums say what they hold), in the order they are interleaved."""
    from medibio.pretrain.corpus import NAMED_CORPORA

    return [p if p in NAMED_CORPORA else "files" for p in (x.strip() for x in corpus.split(",")) if p]


def plan_pretraining(config: PretrainConfig, corpus: str = "biomed-abstracts", variant: str = "abstract",
                     init: str | Path | None = None, tokenizer_dir: str | Path | None = None,
                     data_root: str | Path | None = None, tag: str = "custom") -> PretrainPlan:
    """Plan a run of the effective ``config`` (see :func:`effective_config`); nothing is trained."""
    from medibio import modelzoo, profiles
    from medibio.paths import data_root as resolve_data_root
    from medibio.pretrain.corpus import corpus_files
    from medibio.pretrain.trainer import resolve_precision

    root = resolve_data_root(data_root, must_exist=False)
    settings = {k: v for k, v in config.to_dict().items() if k not in NOT_IDENTITY}
    init_text = None if init is None else str(init)
    vocabulary = None
    if init_text is None and tokenizer_dir is not None:
        folder = Path(tokenizer_dir)
        vocabulary = identity.files_fingerprint(
            [folder / name for name in modelzoo.TOKENIZER_FILES if (folder / name).is_file()], root=folder)
    payload = {
        "protocol": PROTOCOL, "config": settings, "precision": resolve_precision(config.mixed_precision),
        "limit": profiles.limit(),
        "corpus": {"sources": _sources(corpus), "variant": variant,
                   "files": identity.files_fingerprint(corpus_files(corpus, data_root), root=root)},
        "init": None if init_text is None else modelzoo.fingerprint(init_text),
        "vocabulary": vocabulary,
    }
    return PretrainPlan(config, corpus, variant, init_text, None if tokenizer_dir is None else str(tokenizer_dir),
                        tag, payload, identity.digest(payload))
