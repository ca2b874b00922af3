"""Run records: one JSON file per run of any kind, the unit every table, figure and staleness check reads.

Every kind of run — fine-tuning, frozen-encoder baselines, SciERC, intermediate fine-tuning stages,
pretraining — writes the same :class:`RunRecord` (schema version :data:`SCHEMA_VERSION`) at its key's path
(:class:`medibio.runs.identity.RunKey`):
``<results_root>/<kind>/<profile>/<model_tag>/<variant>/<dataset>/<config_digest>/seed<seed>.json``, with
its test predictions beside it (``seed<seed>.test.jsonl``) and its artifacts (an intermediate stage's
encoder, a pretrained model and its checkpoints) in the folder ``seed<seed>/``. The record is written last
and atomically (:mod:`medibio.runs.protocol`): a record on disk means a finished run whose predictions and
artifacts are complete.

What a record holds: the run's identity (kind, dataset, model, profile, variant, seed, ``config_digest`` and
the ``config`` it digests, the ``request`` that planned it), its results (dev curve, dev and test metrics,
scores), what it cost (examples, wall time, throughput, peak memory), one ``environment`` block (device,
processes, CPU threads, library versions with the lock file's digest, git commit) and ``details``: the
fields only one kind has, in one place. Records of earlier schemas stay readable; they are listed as
legacy and never reused.

A record is the evidence for its files: ``digests`` holds the SHA-256 of each file it publishes beside it
(its test predictions), and :meth:`RunRecord.predictions_file` — the one way to reach them — refuses a file
that is missing or differs (:class:`EvidenceError`), so that no table, chapter or interval is ever computed
from predictions other than the ones the record's scores came from. A published file may lie gzipped beside
the record (``seed<seed>.test.jsonl.gz``, as ``reference/`` keeps them): the record still names the plain
file, its digest is over the uncompressed content, and every reader takes either (:func:`evidence_file`).
:func:`medibio.results.verify.verify` checks a whole results root (``medibio results verify``).

A record is also sealed as a whole: every writer (:func:`write_record`) puts into ``seal`` the SHA-256 of
the record's canonical JSON without the seal (:func:`seal_of`), so that a score edited after the run no
longer matches (:func:`check_seal`). Records written before seals have none; ``medibio results verify``
re-scores their predictions against the gold instead.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from medibio.core import profiles
from medibio.core.atomic import LockHeldError, describe_holder, exclusive_lock, json_default, write_json
from medibio.core.errors import InputFormatError, MedibioError, UnknownNameError
from medibio.core.hashing import file_sha256
from medibio.core.text import GZ, file_bytes, strict_json
from medibio.models.zoo import model_tag
from medibio.runs.identity import RunKey
from medibio.tasks import registry

SCHEMA_VERSION = 3
BASE_VARIANT = "base"  # the variant of a run fine-tuned directly, with nothing changed (no stage, option, fold)
KINDS = ("finetune", "frozen", "scierc", "ift-stage", "pretrain")
STATUSES = ("ok", "skipped")
# Records written before this schema: (schema string, what it lacks). Readable, listed as legacy, never reused.
LEGACY_SCHEMAS = {"medibio.run/1": "written before run identities",
                  "medibio.run/2": "written before the one record schema of every kind"}
ENVIRONMENT_FIELDS = ("device", "num_processes", "cpu_threads", "versions", "git_commit")


@dataclass
class RunRecord:
    """Everything about one run (one kind x model x variant x dataset x seed x configuration).

    ``config`` is the effective configuration the run was made with and ``config_digest`` its digest (the
    run's identity); ``request`` is what was asked for, so that ``medibio results list --stale`` can plan
    the same request again and compare digests. ``status`` is ``"skipped"`` (with ``reason``) for runs that
    cannot happen with the data at hand, such as EBM-PICO without a train split: the tables then say so
    instead of inventing a score. ``artifacts`` names folders the run published beside its record (relative
    to the record's folder). ``environment`` is where the numbers were computed: ``cpu_threads`` matters on
    a CPU, where another count rounds differently and a run can end a little elsewhere, as with another seed.
    """

    dataset: str
    model: dict[str, Any]  # {name, path, tag, hash, model_type, parameters}
    profile: str
    seed: int
    kind: str = "finetune"
    variant: str = BASE_VARIANT
    schema_version: int = SCHEMA_VERSION
    run_id: str = ""
    status: str = "ok"
    reason: str | None = None
    group: str = ""
    problem: str = ""
    hyperparameters: dict[str, Any] = field(default_factory=dict)
    dev_curve: list[dict[str, Any]] = field(default_factory=list)  # {epoch, step, train_loss, dev: {...}}
    best_epoch: int | None = None
    dev: dict[str, float] = field(default_factory=dict)
    test: dict[str, float] = field(default_factory=dict)
    score_dev: float | None = None
    score_test: float | None = None
    predictions: str | None = None  # file name, in the record's folder
    artifacts: dict[str, str] = field(default_factory=dict)  # name -> folder relative to the record's folder
    digests: dict[str, str] = field(default_factory=dict)  # file name (in the record's folder) -> SHA-256
    train_examples: int | None = None
    eval_examples: int | None = None
    wall_time_s: float | None = None
    train_examples_per_s: float | None = None
    peak_memory_mb: float | None = None
    environment: dict[str, Any] = field(default_factory=dict)  # ENVIRONMENT_FIELDS
    created: str = ""
    notes: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)  # what only this kind of run has
    config_digest: str = ""
    config: dict[str, Any] = field(default_factory=dict)
    request: dict[str, Any] = field(default_factory=dict)
    schema: str = ""  # the schema string of a legacy record; empty for this schema
    seal: str = ""  # SHA-256 of the record's canonical JSON without this field (seal_of); empty before seals

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {self.status!r}")
        if self.status == "skipped" and not self.reason:
            raise ValueError("a skipped run needs a reason (e.g. 'train split absent')")
        self.seed = int(self.seed)
        if not self.model.get("tag"):
            self.model = {**self.model, "tag": model_tag(self.model.get("name") or self.model.get("path") or "")}
        if (not self.group or not self.problem) and registry.is_blurb(self.dataset):
            spec = registry.get(self.dataset)
            self.group = self.group or spec.group.value
            self.problem = self.problem or spec.problem.value
        if not self.run_id:
            self.run_id = (str(self.key) if not self.legacy else
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
        """Written under an earlier schema (or without a configuration digest): readable, never reused."""
        return bool(self.schema) or not self.config_digest

    @property
    def key(self) -> RunKey:
        if self.legacy:
            raise ValueError(f"run record {self.run_id} is legacy ({self.schema or 'no digest'}): it has no "
                             "run key of this medibio")
        return RunKey(self.kind, self.profile, self.model_tag, self.variant, self.dataset, self.seed,
                      self.config_digest)

    # the environment block, read where tables need it
    @property
    def device(self) -> str:
        return str(self.environment.get("device", ""))

    @property
    def git_commit(self) -> str | None:
        return self.environment.get("git_commit")

    @property
    def num_processes(self) -> int:
        return int(self.environment.get("num_processes", 1))

    @property
    def cpu_threads(self) -> int | None:
        return self.environment.get("cpu_threads")

    @property
    def versions(self) -> dict[str, Any]:
        return dict(self.environment.get("versions", {}))

    @property
    def limited(self) -> int | None:
        """The ``--limit`` (examples per split) this run was made under beyond its profile's own, else None.

        A limited run is another experiment than the profile's: tables and comparisons keep it apart
        (:func:`medibio.results.aggregate.newest_configurations`, the drift's identity) and mark it."""
        limit = self.request.get("limit")
        try:
            own = profiles.get(self.profile).limit
        except UnknownNameError:  # pretraining runs are filed under their configuration's name
            own = None
        return int(limit) if limit is not None and limit != own else None

    @property
    def intermediate(self) -> list[str]:
        """A fine-tuning run's intermediate-task chain (empty without one)."""
        return list(self.details.get("intermediate", []))

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict, keys in contract order (identity first, then results, then provenance)."""
        data = dataclasses.asdict(self)
        for optional in ("schema", "seal"):
            if not data[optional]:
                del data[optional]
        return {key: data[key] for key in _ORDER if key in data}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunRecord:
        """Inverse of :meth:`to_dict` (records of :data:`LEGACY_SCHEMAS` too); unknown or missing keys raise
        ``ValueError`` naming them."""
        if not isinstance(data, dict):
            raise ValueError(f"a run record is a JSON object, got {type(data).__name__}")
        if "schema" in data and "schema_version" not in data:
            data = _from_legacy(data)
        version = data.get("schema_version", SCHEMA_VERSION)
        if version != SCHEMA_VERSION:
            raise ValueError(f"run-record schema version {version!r} (this medibio reads {SCHEMA_VERSION} and "
                             f"the legacy schemas {', '.join(LEGACY_SCHEMAS)})")
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ValueError(f"unknown run-record keys {unknown}")
        required = [f.name for f in dataclasses.fields(cls)
                    if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
        missing = [k for k in required if k not in data]
        if missing:
            raise ValueError(f"run record lacks required keys {missing}")
        return cls(**data)

    def path(self, results_root: str | Path) -> Path:
        """Where this record is (or will be) stored."""
        if self.legacy:
            return (Path(results_root) / self.kind / self.profile / self.model_tag / self.variant / self.dataset
                    / (self.config_digest or "") / f"seed{self.seed}.json")
        return self.key.path(results_root)

    def predictions_file(self, results_root: str | Path) -> Path | None:
        """The run's test predictions (None: it wrote none), checked against the record: a missing file or
        one whose SHA-256 differs from ``digests`` raises :class:`EvidenceError`. Every reader of
        predictions goes through here, so altered evidence is refused wherever it is read."""
        path = self.predictions_location(results_root)
        if path is not None:
            check_evidence(self, path)
        return path

    def predictions_location(self, results_root: str | Path) -> Path | None:
        """Where the run's test predictions lie (plain or gzipped; None: it wrote none), unchecked: for a reader
        that checks them as it reads them (:func:`checked_content`, :func:`checked_sha256`), or that leaves the
        check to the reader of what it computes from them."""
        return evidence_file(self.path(results_root).parent, self.predictions) if self.predictions else None

    def artifact(self, name: str, results_root: str | Path) -> Path:
        """Absolute location of one of the run's published artifacts (``KeyError`` when it has none)."""
        return self.path(results_root).parent / self.artifacts[name]


_ORDER = ("schema_version", "schema", "kind", "run_id", "status", "reason", "dataset", "group", "problem",
          "model", "profile", "seed", "variant", "hyperparameters", "dev_curve", "best_epoch", "dev", "test",
          "score_dev", "score_test", "predictions", "artifacts", "digests", "train_examples", "eval_examples",
          "wall_time_s", "train_examples_per_s", "peak_memory_mb", "environment", "created", "notes", "details",
          "config_digest", "config", "request", "seal")
assert set(_ORDER) == {f.name for f in dataclasses.fields(RunRecord)}


def _from_legacy(data: dict[str, Any]) -> dict[str, Any]:
    """A record of an earlier schema in this schema's fields (it stays legacy: ``schema`` keeps its name)."""
    if data.get("schema") not in LEGACY_SCHEMAS:
        raise ValueError(f"run-record schema {data.get('schema')!r} (this medibio reads version {SCHEMA_VERSION} "
                         f"and {', '.join(LEGACY_SCHEMAS)})")
    out = {k: v for k, v in data.items() if k not in (*ENVIRONMENT_FIELDS, "intermediate")}
    out["environment"] = {k: data[k] for k in ENVIRONMENT_FIELDS if k in data}
    if data.get("intermediate"):
        out["details"] = {"intermediate": data["intermediate"]}
    out.setdefault("kind", "finetune")
    return out


class EvidenceError(MedibioError):
    """A file a run record publishes is missing or is not the file the record was written with."""


def evidence_file(folder: Path, name: str) -> Path:
    """Where a file a record names lies in ``folder``: the plain file, else its gzipped form ``<name>.gz``
    (the same content), else the plain path (missing, for the caller to say so)."""
    plain, packed = folder / name, folder / f"{name}{GZ}"
    return packed if not plain.is_file() and packed.is_file() else plain


def evidence_sha256(path: Path) -> str:
    """SHA-256 of a published file's content (uncompressed, for a gzipped one), read as it is now."""
    if not path.name.endswith(GZ):
        return file_sha256(path, memo=False)
    return hashlib.sha256(file_bytes(path)).hexdigest()


def check_evidence(record: RunRecord, path: Path) -> None:
    """Raise :class:`EvidenceError` unless ``path`` (a file the record names) exists and matches its digest
    (a record written before digests is checked for presence only; ``medibio results verify`` flags it)."""
    expected = _expected_digest(record, path)
    if expected is not None:
        _same_digest(record, path, expected, evidence_sha256(path))


def checked_content(record: RunRecord, path: Path) -> bytes:
    """The content of ``path`` (a file the record names; uncompressed), checked as :func:`check_evidence` checks
    it: for a reader that needs the bytes themselves, which then decompresses the file once instead of twice."""
    expected = _expected_digest(record, path)
    data = file_bytes(path)
    if expected is not None:
        _same_digest(record, path, expected, hashlib.sha256(data).hexdigest())
    return data


def checked_sha256(record: RunRecord, path: Path) -> str:
    """SHA-256 of the content of ``path`` (a file the record names), checked as :func:`check_evidence` checks it,
    in one hashing (a record written before digests: the file's own)."""
    expected = _expected_digest(record, path)
    found = evidence_sha256(path)
    if expected is not None:
        _same_digest(record, path, expected, found)
    return found


def _where(record: RunRecord, path: Path) -> str:
    return f"run record {record.run_id} (its folder {path.parent})"


def _expected_digest(record: RunRecord, path: Path) -> str | None:
    """The digest the record gives ``path`` (None: written before digests); :class:`EvidenceError` when the file
    is missing."""
    if not path.is_file():
        what = "a folder" if path.is_dir() else "missing"
        raise EvidenceError(f"{path}: {what}, but {_where(record, path)} names it as its {path.name} — the record's "
                            "scores came from that file; restore it (e.g. from reference/ or git) or delete the "
                            "record and run again")
    return record.digests.get(path.name.removesuffix(GZ))


def _same_digest(record: RunRecord, path: Path, expected: str, found: str) -> None:
    if found != expected:
        raise EvidenceError(f"{path} is not the file {_where(record, path)} was written with: SHA-256 expected "
                            f"{expected}, found {found}. It was edited, truncated or replaced after the run; "
                            "restore it or delete the record and run again")


def add_digests(record: RunRecord, folder: Path) -> list[str]:
    """Put the digest of each published file the record lacks one for into it (never changes a digest it
    has); return the names added."""
    added = []
    if record.predictions and record.predictions not in record.digests:
        path = evidence_file(folder, record.predictions)
        if not path.is_file():
            raise EvidenceError(f"{path}: missing, but run record {record.run_id} names it as its predictions")
        record.digests[record.predictions] = evidence_sha256(path)
        added.append(record.predictions)
    return added


# --- locations, locks ---------------------------------------------------------------------------------

class SealError(MedibioError):
    """A sealed run record whose content is no longer what was sealed: a field was edited after the run."""


def seal_of(data: dict[str, Any]) -> str:
    """SHA-256 of a record's content as it lies on disk (canonical JSON: sorted keys, no spaces), its own
    ``seal`` left out: any edited value, score or digest, gives another seal."""
    body = {key: value for key, value in data.items() if key != "seal"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def sealed(record: RunRecord) -> dict[str, Any]:
    """The record's content as it will lie on disk, with its seal (which ``record`` then carries too): what
    every writer of a record writes, in one atomic write."""
    record.seal = ""
    data = json.loads(json.dumps(record.to_dict(), default=json_default))
    record.seal = data["seal"] = seal_of(data)
    return data


def write_record(record: RunRecord, results_root: str | Path) -> Path:
    """Write a record atomically to its key's path, sealed (:func:`sealed`), and return the path."""
    if record.legacy:
        raise ValueError(f"refusing to write {record.run_id} without a configuration digest of this schema")
    return write_json(record.path(results_root), sealed(record))


def check_seal(path: str | Path) -> bool:
    """Whether the record at ``path`` carries a seal (False: written before seals); raise :class:`SealError`
    when its content is not what was sealed."""
    path = Path(path)
    data = strict_json(path.read_text(encoding="utf-8"))
    sealed = data.get("seal") if isinstance(data, dict) else None
    if not sealed:
        return False
    found = seal_of(data)
    if found != sealed:
        raise SealError(f"{path}: this run record is not the one its run wrote: its seal (SHA-256 of its content) "
                        f"is {sealed}, its content now gives {found}; a value (a score, a digest, ...) was edited "
                        "after the run. Restore the record (git, or the results root it was recorded from) or "
                        "delete it and run again")
    return True


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
    """Hold ``seed<N>.lock`` beside the run's record while training it (:func:`medibio.core.atomic.exclusive_lock`).

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


def producer_of(folder: str | Path) -> RunRecord | None:
    """The run record that wrote ``folder`` as one of its artifacts (``<run folder>/seed<N>/model`` beside
    ``seed<N>.json``), or None: what a fine-tuning run records of the model it starts from when one of our
    runs made it (a pretraining run: how many tokens it saw)."""
    path = Path(folder).resolve()
    if not path.is_dir() or not path.parent.name or not (record_path := path.parent.with_suffix(".json")).is_file():
        return None
    record = read_record(record_path)
    return record if f"{path.parent.name}/{path.name}" in record.artifacts.values() else None


def read_record(path: str | Path) -> RunRecord:
    """Read one record; malformed content raises :class:`InputFormatError` naming the file."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    try:
        data = strict_json(text)
    except json.JSONDecodeError as exc:
        raise InputFormatError(path, exc.lineno, "a JSON run record", exc.msg) from exc
    try:
        record = RunRecord.from_dict(data)
    except (TypeError, ValueError) as exc:
        raise InputFormatError(path, None, f"a run record (schema version {SCHEMA_VERSION})", str(exc)) from exc
    _check_filed(record, path)
    return record


def _check_filed(record: RunRecord, path: Path) -> None:
    """A record must lie where its own fields put it: a record moved or edited into another profile's (or
    model's, dataset's ...) folder would be read as that one's run and look for its files elsewhere."""
    if record.legacy:
        return
    parts = dict(zip(("kind", "profile", "model tag", "variant", "dataset", "config digest", "file"),
                     record.key.path("").parts, strict=True))
    found = dict(zip(parts, path.parts[-len(parts):], strict=False))
    wrong = [f"its {name} is {value!r} but it is filed under {found.get(name)!r}"
             for name, value in parts.items() if found.get(name) != value]
    if wrong:
        raise InputFormatError(path, None, f"a run record filed where its own fields put it ({'; '.join(wrong)}): "
                               "move it back or restore its fields")


def record_files(results_root: str | Path, kind: str) -> Iterator[Path]:
    """The files under one kind's folder named like a run record (``seed<N>.json``, at any depth: records of
    earlier schemas lie one level higher), whether or not they parse."""
    for path in (Path(results_root) / kind).rglob("seed*.json"):
        if path.stem[4:].isdigit() and path.is_file():
            yield path


def contents(results_root: str | Path) -> dict[str, str]:
    """Every run record and evidence file of a results root (``seed*`` under each kind's folder) by its path
    there and the SHA-256 of its bytes: what everything computed from the records depends on, told apart from
    the other files a build writes beside them."""
    root = Path(results_root)
    return {str(p.relative_to(root)): file_sha256(p) for kind in KINDS if (root / kind).is_dir()
            for p in sorted((root / kind).rglob("seed*")) if p.is_file()}


def require_root(results_root: str | Path, what: str = "results root") -> Path:
    """``results_root`` if it is a results root, else a :class:`MedibioError` saying what it is instead:
    nothing there is not an empty answer. A results root is known by its run records (a ``seed<N>.json``
    under a kind's folder that reads as a run record), not by the names of its folders: a data root has a
    ``scierc/`` folder too."""
    root = Path(results_root)
    expected = f"a {what}: a folder whose {'/, '.join(KINDS)}/ folders hold run records (seed<N>.json)"
    if not root.exists():
        raise MedibioError(f"{root}: no such folder; expected {expected}")
    if not root.is_dir():
        raise MedibioError(f"{root}: a file; expected {expected}")
    unreadable: list[str] = []
    for kind in KINDS:
        for path in record_files(root, kind):
            try:
                read_record(path)
                return root
            except (MedibioError, OSError, UnicodeDecodeError) as exc:
                unreadable.append(str(exc))
    if unreadable:
        hint = f"none of its {len(unreadable)} seed<N>.json files reads as a run record; first: {unreadable[0]}"
    elif root.name in KINDS:
        hint = f"{root} is one kind's folder: give its parent, {root.parent}"
    elif (root / "blurb").is_dir():
        hint = "it looks like a data root, with blurb/"
    elif not any(root.iterdir()):
        hint = "it is empty"
    else:
        hint = "it holds no run records"
    raise MedibioError(f"{root} is not a results root ({hint}); expected {expected}")


def load_records(results_root: str | Path, profile: str | None = None, model: str | None = None,
                 variant: str | None = None, dataset: str | None = None, kind: str = "finetune",
                 config_digest: str | None = None, legacy: bool = True) -> list[RunRecord]:
    """All records of one kind under a results root, optionally filtered; sorted by profile, model,
    variant, BLURB dataset order, seed. ``model`` may be a tag or anything :func:`medibio.models.zoo.model_tag`
    understands. ``legacy=False`` leaves out records of earlier schemas."""
    root = Path(results_root) / kind
    if not root.is_dir():
        return []
    tag = None if model is None else model_tag(model)
    if dataset is not None and registry.is_blurb(dataset):
        dataset = registry.get(dataset).name
    prefix = "/".join(x or "*" for x in (profile, tag, variant, dataset))
    paths = list(root.glob(f"{prefix}/{config_digest or '*'}/seed*.json"))
    if legacy and config_digest is None:
        paths += root.glob(f"{prefix}/seed*.json")
    records = [read_record(p) for p in paths if not p.name.startswith(".") and p.name.endswith(".json")
               and not p.name.endswith(".test.json")]
    return sorted((r for r in records if legacy or not r.legacy), key=_sort_key)


def _sort_key(rec: RunRecord) -> tuple:
    order = {n: i for i, n in enumerate(registry.names())}
    return (rec.profile, rec.model_tag, rec.variant, order.get(rec.dataset, len(order)), rec.dataset, rec.seed)
