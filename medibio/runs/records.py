"""Run records: one JSON file per run, the unit every table and figure is built from.

A record sits at its key's path (:class:`medibio.runs.identity.RunKey`):
``<results_root>/<kind>/<profile>/<model_tag>/<variant>/<dataset>/<config_digest>/seed<seed>.json`` with the
test predictions beside it (``seed<seed>.test.jsonl``, the ``medibio blurb score`` format). The digest
covers the run's whole effective configuration (``config``, stored in the record), so a request finds its
own earlier record — and only that one — without reading anything else: a changed preset runs into a new
record and never reuses or overwrites an old one. Records are written atomically, so a killed run never
leaves a half record that would be mistaken for a finished one, and a per-run lock (a kernel lock, released
when its process ends) keeps two processes from training the same run at once.

Records of schema ``medibio.run/1`` (written before run identities, without a digest) stay readable: they
are listed as legacy by ``medibio results list`` and never reused.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from medibio.atomic import LockHeldError, describe_holder, exclusive_lock, write_json
from medibio.errors import InputFormatError
from medibio.runs.identity import RunKey

SCHEMA = "medibio.run/2"
LEGACY_SCHEMAS = ("medibio.run/1",)  # readable, listed as legacy, never reused
KIND = "finetune"
STATUSES = ("ok", "skipped")



@dataclass
class RunRecord:
    """Everything about one run (one model x variant x dataset x seed x configuration).

    ``config`` is the effective configuration the run was made with and ``config_digest`` its digest (the
    run's identity); ``request`` is what was asked for (overrides, chain, variant label), so that
    ``medibio results list --stale`` can recompute the digest the same request would get today.
    ``status`` is ``"skipped"`` (with ``reason``) for runs that cannot happen with the data at hand, such as
    EBM-PICO without a train split: the tables then say so instead of inventing a score.
    """

    dataset: str
    model: dict[str, Any]  # {name, path, tag, hash, model_type, parameters}
    profile: str
    seed: int
    variant: str = "base"  # "base" or e.g. "ift-STS-B"
    schema: str = SCHEMA
    kind: str = KIND
    run_id: str = ""
    group: str = ""
    problem: str = ""
    intermediate: list[str] = field(default_factory=list)
    hyperparameters: dict[str, Any] = field(default_factory=dict)
    dev_curve: list[dict[str, Any]] = field(default_factory=list)  # {epoch, step, train_loss, dev: {...}}
    best_epoch: int | None = None
    dev: dict[str, float] = field(default_factory=dict)
    test: dict[str, float] = field(default_factory=dict)
    score_dev: float | None = None
    score_test: float | None = None
    predictions: str | None = None  # relative to the record's folder
    train_examples: int | None = None
    eval_examples: int | None = None
    wall_time_s: float | None = None
    train_examples_per_s: float | None = None
    peak_memory_mb: float | None = None
    device: str = ""
    num_processes: int = 1
    # intra-op CPU threads the run computed with (medibio.cores): another count rounds differently, so the
    # same configuration can end a little elsewhere, as with another seed. None in records made before.
    cpu_threads: int | None = None
    versions: dict[str, Any] = field(default_factory=dict)
    git_commit: str | None = None
    created: str = ""
    notes: list[str] = field(default_factory=list)
    status: str = "ok"
    reason: str | None = None
    config_digest: str = ""
    config: dict[str, Any] = field(default_factory=dict)
    request: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {self.status!r}")
        if self.status == "skipped" and not self.reason:
            raise ValueError("a skipped run needs a reason (e.g. 'train split absent')")
        self.seed = int(self.seed)
        if not self.model.get("tag"):
            self.model = {**self.model, "tag": model_tag(self.model.get("name") or self.model.get("path") or "")}
        if not self.group or not self.problem:
            spec = _blurb_spec(self.dataset)
            if spec is not None:
                self.group = self.group or spec.group.value
                self.problem = self.problem or spec.problem.value
        if not self.run_id:
            self.run_id = (str(self.key) if self.config_digest else
                           f"{self.profile}/{self.model_tag}/{self.variant}/{self.dataset}/seed{self.seed}")
        if not self.created:
            self.created = datetime.now(timezone.utc).isoformat(timespec="seconds")

    @property
    def model_tag(self) -> str:
        return str(self.model["tag"])

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def legacy(self) -> bool:
        """Written before run identities (no configuration digest): readable, never reused."""
        return not self.config_digest

    @property
    def key(self) -> RunKey:
        if self.legacy:
            raise ValueError(f"run record {self.run_id} predates run identities (schema {self.schema}): "
                             "it has no configuration digest")
        return RunKey(self.kind, self.profile, self.model_tag, self.variant, self.dataset, self.seed,
                      self.config_digest)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict, keys in contract order (identity first, then results, then provenance)."""
        data = dataclasses.asdict(self)
        return {key: data[key] for key in _ORDER}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunRecord:
        """Inverse of :meth:`to_dict`; unknown or missing keys raise ``ValueError`` naming them."""
        if not isinstance(data, dict):
            raise ValueError(f"a run record is a JSON object, got {type(data).__name__}")
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ValueError(f"unknown run-record keys {unknown}")
        required = [f.name for f in dataclasses.fields(cls)
                    if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
        missing = [k for k in required if k not in data]
        if missing:
            raise ValueError(f"run record lacks required keys {missing}")
        schema = data.get("schema", SCHEMA)
        if schema != SCHEMA and schema not in LEGACY_SCHEMAS:
            raise ValueError(f"run-record schema {schema!r} (this medibio reads {SCHEMA!r} and "
                             f"{', '.join(LEGACY_SCHEMAS)})")
        return cls(**data)

    def path(self, results_root: str | Path) -> Path:
        """Where this record is (or will be) stored."""
        if self.legacy:
            return (Path(results_root) / self.kind / self.profile / self.model_tag / self.variant / self.dataset
                    / f"seed{self.seed}.json")
        return self.key.path(results_root)

    def predictions_file(self, results_root: str | Path) -> Path | None:
        """Absolute location of the test predictions, if the run wrote any."""
        if not self.predictions:
            return None
        return self.path(results_root).parent / self.predictions


_ORDER = ("schema", "kind", "run_id", "status", "reason", "dataset", "group", "problem", "model", "profile",
          "seed", "variant", "intermediate", "hyperparameters", "dev_curve", "best_epoch", "dev", "test",
          "score_dev", "score_test", "predictions", "train_examples", "eval_examples", "wall_time_s",
          "train_examples_per_s", "peak_memory_mb", "device", "num_processes", "cpu_threads", "versions", "git_commit",
          "created", "notes", "config_digest", "config", "request")
assert set(_ORDER) == {f.name for f in dataclasses.fields(RunRecord)}


def skipped_record(dataset: str, model: dict[str, Any], profile: str, seed: int, reason: str,
                   variant: str = "base", **fields: Any) -> RunRecord:
    """A record stating that a run was not made, and why (written so tables can say so)."""
    return RunRecord(dataset=dataset, model=model, profile=profile, seed=seed, variant=variant,
                     status="skipped", reason=reason, notes=[reason, *fields.pop("notes", [])], **fields)


def _blurb_spec(dataset: str):
    from medibio.blurb import registry

    try:
        return registry.get(dataset)
    except KeyError:
        return None


# --- model identity -----------------------------------------------------------------------------------

def _sanitise(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "model"


def model_tag(name_or_path: str | Path) -> str:
    """Short, filesystem-safe name of a model used in result paths.

    ``minilm`` for the packaged MiniLM (any alias or its folder), ``tiny-deberta`` for the tiny test model,
    the folder name for local folders, and ``org__name`` for hub ids.
    """
    from medibio import modelzoo

    text = str(name_or_path).strip()
    key = text.lower()
    if key in modelzoo.MINILM_ALIASES:
        return "minilm"
    if key == modelzoo.TINY_DEBERTA:
        return "tiny-deberta"
    if key in modelzoo.HUB_MODELS:
        text = modelzoo.HUB_MODELS[key]
    path = Path(text).expanduser()
    if path.exists():
        resolved = path.resolve()
        try:
            if resolved == modelzoo.minilm_path().resolve():
                return "minilm"
        except ImportError:
            pass
        if resolved.name.startswith("tiny-deberta") and resolved.parent == modelzoo.cache_root().resolve():
            return "tiny-deberta"
        return _sanitise(resolved.name)
    return _sanitise(text.replace("/", "__"))


def model_fingerprint(name_or_path: str | Path) -> str:
    """The model's fingerprint in records: :func:`medibio.modelzoo.fingerprint` (config, weights and
    tokenizer files; a hub model from its complete snapshot, fetched first where the cache lacks files)."""
    from medibio import modelzoo

    return modelzoo.fingerprint(name_or_path)


def model_info(name_or_path: str | Path, model: Any = None) -> dict[str, Any]:
    """The ``model`` block of a record: name, resolved path, tag, fingerprint, type and parameter count.

    ``model`` (a loaded ``torch.nn.Module``) supplies the parameter count; without it the count is None.
    """
    from medibio import modelzoo

    path = modelzoo.resolve(name_or_path)
    config = getattr(model, "config", None)
    model_type = getattr(config, "model_type", None)
    folder = Path(path) if Path(path).is_dir() else modelzoo.cached_snapshot(path)  # hub id: its snapshot
    if model_type is None and folder is not None and (folder / "config.json").is_file():
        model_type = json.loads((folder / "config.json").read_text(encoding="utf-8")).get("model_type")
    parameters = sum(p.numel() for p in model.parameters()) if model is not None else None
    return {"name": str(name_or_path), "path": str(path), "tag": model_tag(name_or_path),
            "hash": model_fingerprint(name_or_path), "model_type": model_type, "parameters": parameters}


# --- locations, locks ---------------------------------------------------------------------------------

def write_record(record: RunRecord, results_root: str | Path) -> Path:
    """Write a record atomically to its key's path and return the path."""
    if record.legacy:
        raise ValueError(f"refusing to write {record.run_id} without a configuration digest")
    return write_json(record.path(results_root), record.to_dict())


def find_record(results_root: str | Path, key: RunKey) -> RunRecord | None:
    """The record of exactly this run (same configuration digest), or None."""
    path = key.path(results_root)
    return read_record(path) if path.is_file() else None


class RunLockedError(LockHeldError):
    """Another live process is training this run."""

    def __init__(self, key: RunKey, path: Path, holder: dict[str, Any] | None) -> None:
        super().__init__(path, holder)
        self.args = (f"{key} is being trained by {describe_holder(holder)} (lock {path})",)


@contextlib.contextmanager
def run_lock(key: RunKey, results_root: str | Path, wait: bool = True, poll_s: float = 0.5,
             log: Callable[[str], None] | None = None) -> Iterator[Path]:
    """Hold ``seed<N>.lock`` beside the run's record while training it (:func:`medibio.atomic.exclusive_lock`).

    A second process asking for the same run waits (``wait=True``; it then finds the finished record) or
    gets :class:`RunLockedError`. The lock is the kernel's: a killed process's lock is free at once, so two
    processes can never both take over one left behind, and nothing depends on process ids or hosts.
    """
    path = key.lock_path(results_root)

    def waiting(holder: dict[str, Any] | None) -> None:
        if log:
            log(f"{key}: waiting for {describe_holder(holder)} to finish it (lock {path})")

    def stale(holder: dict[str, Any]) -> None:
        if log:
            log(f"{key}: took over a stale lock ({path}) left by {describe_holder(holder)}, which ended "
                "without releasing it")

    try:
        with exclusive_lock(path, wait=wait, poll_s=poll_s, on_wait=waiting, on_stale=stale) as held:
            yield held
    except LockHeldError as exc:
        if isinstance(exc, RunLockedError) or exc.path != path:
            raise
        raise RunLockedError(key, path, exc.holder) from None


def read_record(path: str | Path) -> RunRecord:
    """Read one record; malformed content raises :class:`InputFormatError` naming the file."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputFormatError(path, exc.lineno, "a JSON run record", exc.msg) from exc
    try:
        return RunRecord.from_dict(data)
    except (TypeError, ValueError) as exc:
        raise InputFormatError(path, None, f"a run record ({SCHEMA})", str(exc)) from exc


def load_records(results_root: str | Path, profile: str | None = None, model: str | None = None,
                 variant: str | None = None, dataset: str | None = None, kind: str = KIND,
                 config_digest: str | None = None, legacy: bool = True) -> list[RunRecord]:
    """All records of one kind under a results root, optionally filtered; sorted by profile, model,
    variant, BLURB dataset order, seed. ``model`` may be a tag or anything :func:`model_tag` understands.
    ``legacy=False`` leaves out records written before run identities."""
    root = Path(results_root) / kind
    if not root.is_dir():
        return []
    tag = None if model is None else model_tag(model)
    if dataset is not None:
        spec = _blurb_spec(dataset)
        dataset = spec.name if spec is not None else dataset
    prefix = "/".join(x or "*" for x in (profile, tag, variant, dataset))
    paths = list(root.glob(f"{prefix}/{config_digest or '*'}/seed*.json"))
    if legacy and config_digest is None:
        paths += root.glob(f"{prefix}/seed*.json")
    records = [read_record(p) for p in paths if not p.name.startswith(".") and p.name.endswith(".json")
               and not p.name.endswith(".test.json")]
    return sorted((r for r in records if legacy or not r.legacy), key=_sort_key)


def _sort_key(rec: RunRecord) -> tuple:
    from medibio.blurb import registry

    order = {n: i for i, n in enumerate(registry.names())}
    return (rec.profile, rec.model_tag, rec.variant, order.get(rec.dataset, len(order)), rec.dataset, rec.seed)


# --- environment --------------------------------------------------------------------------------------

def environment_info() -> dict[str, Any]:
    """Versions, device, git commit and torch threads (:func:`medibio.provenance.environment`)."""
    from medibio.provenance import environment

    return environment()
