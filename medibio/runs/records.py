"""Run records: one JSON file per fine-tuning run, the unit every table and figure is built from.

A record sits at ``<results_root>/finetune/<profile>/<model_tag>/<variant>/<dataset>/seed<seed>.json``
with the test predictions beside it (``seed<seed>.test.jsonl``, the ``medibio blurb score`` format).
The path is a pure function of (profile, model, variant, dataset, seed), so a runner can tell whether a
run is already done (resume after a crash) without reading anything else, and records are written
atomically so a killed run never leaves a half record that would be mistaken for a finished one.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import re
import subprocess
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from medibio.atomic import write_json
from medibio.errors import InputFormatError

SCHEMA = "medibio.run/1"
KIND = "finetune"
STATUSES = ("ok", "skipped")

_WEIGHT_PATTERNS = ("model.safetensors", "model-*.safetensors", "pytorch_model.bin", "pytorch_model-*.bin")
_CHUNK = 1 << 20


@dataclass
class RunRecord:
    """Everything about one fine-tuning run (one model x variant x dataset x seed).

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
    versions: dict[str, Any] = field(default_factory=dict)
    git_commit: str | None = None
    created: str = ""
    notes: list[str] = field(default_factory=list)
    status: str = "ok"
    reason: str | None = None

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
            self.run_id = f"{self.profile}/{self.model_tag}/{self.variant}/{self.dataset}/seed{self.seed}"
        if not self.created:
            self.created = datetime.now(timezone.utc).isoformat(timespec="seconds")

    @property
    def model_tag(self) -> str:
        return str(self.model["tag"])

    @property
    def ok(self) -> bool:
        return self.status == "ok"

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
        if data.get("schema", SCHEMA) != SCHEMA:
            raise ValueError(f"run-record schema {data.get('schema')!r} (this medibio reads {SCHEMA!r})")
        return cls(**data)

    def path(self, results_root: str | Path) -> Path:
        """Where this record is (or will be) stored."""
        return record_path(results_root, self.profile, self.model_tag, self.variant, self.dataset, self.seed)

    def predictions_file(self, results_root: str | Path) -> Path | None:
        """Absolute location of the test predictions, if the run wrote any."""
        if not self.predictions:
            return None
        return self.path(results_root).parent / self.predictions


_ORDER = ("schema", "kind", "run_id", "status", "reason", "dataset", "group", "problem", "model", "profile",
          "seed", "variant", "intermediate", "hyperparameters", "dev_curve", "best_epoch", "dev", "test",
          "score_dev", "score_test", "predictions", "train_examples", "eval_examples", "wall_time_s",
          "train_examples_per_s", "peak_memory_mb", "device", "num_processes", "versions", "git_commit",
          "created", "notes")
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


def _hash_file(digest: Any, path: Path) -> None:
    digest.update(path.name.encode() + b"\0")
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)


_FINGERPRINTS: dict[tuple[str, tuple[tuple[str, int, int], ...]], str] = {}


def model_fingerprint(name_or_path: str | Path) -> str:
    """``sha256:<hex>`` over config.json and the weight file(s) of a local model folder.

    Files are streamed (weights can be gigabytes) and results are memoised per process on (path, size,
    mtime). For a hub id that is not local, the hash covers the config only (``config-sha256:<hex>``):
    weights are not fetched just to name them.
    """
    from medibio import modelzoo

    target = Path(modelzoo.resolve(name_or_path)).expanduser()
    if not target.is_dir():
        config = modelzoo.load_config(str(name_or_path))
        text = json.dumps(config.to_dict(), sort_keys=True, default=str)
        return "config-sha256:" + hashlib.sha256(text.encode()).hexdigest()
    files = [target / "config.json"] if (target / "config.json").is_file() else []
    weights = sorted({p for pattern in _WEIGHT_PATTERNS for p in target.glob(pattern)})
    files.extend(weights)
    if not weights:
        raise FileNotFoundError(f"no weights ({', '.join(_WEIGHT_PATTERNS)}) in model folder {target}")
    key = (str(target.resolve()), tuple((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in files))
    if key not in _FINGERPRINTS:
        digest = hashlib.sha256()
        for path in files:
            _hash_file(digest, path)
        _FINGERPRINTS[key] = "sha256:" + digest.hexdigest()
    return _FINGERPRINTS[key]


def model_info(name_or_path: str | Path, model: Any = None) -> dict[str, Any]:
    """The ``model`` block of a record: name, resolved path, tag, fingerprint, type and parameter count.

    ``model`` (a loaded ``torch.nn.Module``) supplies the parameter count; without it the count is None.
    """
    from medibio import modelzoo

    path = modelzoo.resolve(name_or_path)
    config = getattr(model, "config", None)
    model_type = getattr(config, "model_type", None)
    if model_type is None and Path(path).is_dir() and (Path(path) / "config.json").is_file():
        model_type = json.loads((Path(path) / "config.json").read_text(encoding="utf-8")).get("model_type")
    parameters = sum(p.numel() for p in model.parameters()) if model is not None else None
    return {"name": str(name_or_path), "path": str(path), "tag": model_tag(name_or_path),
            "hash": model_fingerprint(name_or_path), "model_type": model_type, "parameters": parameters}


# --- locations ----------------------------------------------------------------------------------------

def _component(value: str | int, what: str) -> str:
    text = str(value)
    if not text or "/" in text or "\\" in text or text in (".", ".."):
        raise ValueError(f"{what} {text!r} cannot be a path component")
    return text


def record_dir(results_root: str | Path, profile: str, model_tag: str, variant: str, dataset: str) -> Path:
    """Folder holding the records of all seeds of one (profile, model, variant, dataset)."""
    return (Path(results_root) / KIND / _component(profile, "profile") / _component(model_tag, "model tag")
            / _component(variant, "variant") / _component(dataset, "dataset"))


def record_path(results_root: str | Path, profile: str, model_tag: str, variant: str, dataset: str,
                seed: int) -> Path:
    """``<root>/finetune/<profile>/<model_tag>/<variant>/<dataset>/seed<seed>.json``."""
    return record_dir(results_root, profile, model_tag, variant, dataset) / f"seed{int(seed)}.json"


def predictions_path(results_root: str | Path, profile: str, model_tag: str, variant: str, dataset: str,
                     seed: int) -> Path:
    """Test predictions of a run: ``seed<seed>.test.jsonl`` next to its record."""
    return record_dir(results_root, profile, model_tag, variant, dataset) / f"seed{int(seed)}.test.jsonl"


def write_record(record: RunRecord, results_root: str | Path) -> Path:
    """Write a record atomically to its canonical place and return the path."""
    return write_json(record.path(results_root), record.to_dict())


def record_exists(results_root: str | Path, profile: str, model_tag: str, variant: str, dataset: str,
                  seed: int) -> bool:
    """True when the run was completed (or recorded as skipped) earlier: runners skip it unless forced."""
    return record_path(results_root, profile, model_tag, variant, dataset, seed).is_file()


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
                 variant: str | None = None, dataset: str | None = None) -> list[RunRecord]:
    """All records under a results root, optionally filtered; sorted by profile, model, variant,
    BLURB dataset order, seed. ``model`` may be a tag or anything :func:`model_tag` understands."""
    root = Path(results_root) / KIND
    if not root.is_dir():
        return []
    tag = None if model is None else model_tag(model)
    if dataset is not None:
        spec = _blurb_spec(dataset)
        dataset = spec.name if spec is not None else dataset
    pattern = "/".join(x or "*" for x in (profile, tag, variant, dataset)) + "/seed*.json"
    records = [read_record(p) for p in root.glob(pattern) if not p.name.startswith(".")]
    return sorted(records, key=_sort_key)


def _sort_key(rec: RunRecord) -> tuple:
    from medibio.blurb import registry

    order = {n: i for i, n in enumerate(registry.names())}
    return (rec.profile, rec.model_tag, rec.variant, order.get(rec.dataset, len(order)), rec.dataset, rec.seed)


# --- environment --------------------------------------------------------------------------------------

_PACKAGES = ("torch", "transformers", "accelerate", "datasets", "tokenizers", "numpy", "scipy", "seqeval",
             "medibio")


@functools.lru_cache(maxsize=8)
def git_commit(repo: str | Path | None = None) -> str | None:
    """``git rev-parse HEAD`` of the checkout (``+dirty`` when tracked files changed), None outside git."""
    from medibio.paths import REPO_ROOT

    cwd = str(repo or REPO_ROOT)
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=cwd,
                               capture_output=True, text=True, timeout=20, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("+dirty" if dirty else "") if head else None


def environment_info() -> dict[str, Any]:
    """What a record needs to say about where it ran: versions, device, git commit, torch threads.

    Returns ``{"versions": {...}, "device": str, "git_commit": str | None, "torch_threads": int}``;
    ``versions`` also carries ``python`` and ``torch_num_threads`` so a record keeps it.
    """
    import importlib.metadata as md
    import platform

    versions: dict[str, Any] = {"python": platform.python_version()}
    for pkg in _PACKAGES:
        try:
            versions[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            versions[pkg] = None
    device = "cpu"
    threads = 1
    try:
        import torch

        threads = torch.get_num_threads()
        if torch.cuda.is_available():
            device = f"cuda ({torch.cuda.get_device_name(0)} x{torch.cuda.device_count()})"
        else:
            device = f"cpu ({platform.processor() or platform.machine()}, {threads} threads)"
    except ImportError:
        pass
    versions["torch_num_threads"] = threads
    return {"versions": versions, "device": device, "git_commit": git_commit(), "torch_threads": threads}
