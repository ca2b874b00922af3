"""The one run protocol: plan → identity → lock → reuse or train → atomic record. Every kind of run goes
through :func:`run`.

A *kind* (fine-tuning, frozen baselines, SciERC, intermediate stages, pretraining) supplies two things: a
:class:`Plan` — what will run and the identity payload whose digest names it (built with :func:`plan`) — and
``train(plan, context) -> Outcome``: the record of a finished run, its test predictions, the artifacts it
built in ``context.workdir``. Everything else happens here, the same way for all of them: the main process
takes the run's lock and looks for its record; every process learns the answer; a found record is reused as
it is; otherwise every process trains with one thread count fixed for the whole run (another count rounds
differently), and the main process writes the predictions, publishes the artifacts (one rename of the work
folder) and writes the record last, each atomically, so a record on disk always means a complete run. All
processes meet at a barrier before leaving, with the lock still held. A killed run leaves no record; its
work folder survives, so a kind that checkpoints (pretraining) resumes from it.
"""

from __future__ import annotations

import contextlib
import errno
import shutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from medibio.core import precision, progress, provenance
from medibio.core.atomic import write_jsonl
from medibio.core.errors import MedibioError
from medibio.core.hashing import canonical_json, digest, file_sha256
from medibio.core.settings import Settings
from medibio.core.text import GZ
from medibio.runs import records as rec
from medibio.runs.identity import RunKey

# Part of every run's digest: bump it when a code change alters what a given configuration computes, so that
# records made by the old code are never taken for the new code's results.
PROTOCOL = 3
# errors of a results root that can be read but not written: its records are reused without a lock
_CANNOT_WRITE = (errno.EROFS, errno.EACCES, errno.EPERM)
# Training and dev caps draw the same seeded subset for every seed and model (comparable runs).
SUBSET_SEED = 12345


class NotRecordedError(MedibioError):
    """A session that renders from recorded results (``Settings.recorded``) asked for a run they lack:
    training it would pass a fresh result off as a recorded one."""


@dataclass(frozen=True)
class Plan:
    """One run, resolved before anything is trained: its key, the effective configuration (``payload``,
    whose digest is the key's), the ``request`` that plans it again, a ``label`` for progress lines, and
    ``job``: what the kind's ``train`` needs (specs, config objects); ``machine``: the dotted paths of payload
    entries that this machine decides rather than the request (the precision a CPU without native bf16 falls
    back to), which a build from recorded results may find decided otherwise where the runs were recorded."""

    key: RunKey
    payload: dict[str, Any]
    request: dict[str, Any]
    label: str
    job: Any = None
    machine: tuple[str, ...] = ()


def plan(kind: str, profile: str, model_tag: str, variant: str, dataset: str, seed: int,
         configuration: Mapping[str, Any], request: Mapping[str, Any], label: str, job: Any = None,
         machine: Sequence[str] = ()) -> Plan:
    """A :class:`Plan` whose identity payload is ``configuration`` under this protocol's version and kind
    (``machine``: see :class:`Plan`)."""
    payload = {"protocol": PROTOCOL, "kind": kind, **configuration}
    key = RunKey(kind, profile, model_tag, variant, dataset, int(seed), digest(payload))
    return Plan(key, payload, dict(request), label, job, tuple(machine))


@dataclass
class RunContext:
    """What a kind's ``train`` gets: the settings, the accelerator (None for kinds that make their own or run
    on the CPU alone), the work folder for artifacts, the run's CPU threads and the progress line."""

    plan: Plan
    settings: Settings
    accelerator: Any
    workdir: Path
    threads: int
    log: Callable[[str], None]

    @property
    def results_root(self) -> Path:
        return self.settings.results_root

    def record(self, **fields: Any) -> rec.RunRecord:
        """A record of this run: ``fields`` (results, model, kind-specific ``details``) plus its identity
        and the environment block every kind's records share."""
        key = self.plan.key
        acc = self.accelerator
        env = provenance.environment()
        environment = {"device": device_name(acc), "cpu": env["cpu"], "cpu_flags": env["cpu_flags"],
                       "num_processes": getattr(acc, "num_processes", 1),
                       "cpu_threads": self.threads, "versions": env["versions"], "git_commit": env["git_commit"]}
        identity = {"kind": key.kind, "profile": key.profile, "variant": key.variant, "dataset": key.dataset,
                    "seed": key.seed, "config_digest": key.config_digest, "config": self.plan.payload,
                    "request": self.plan.request, "environment": environment}
        return rec.RunRecord(**{**identity, **fields})


@dataclass
class Outcome:
    """What ``train`` returns: the record, the test predictions (None: the run has none) and the names of the
    folders it built in the work folder that are to be published with the record."""

    record: rec.RunRecord
    predictions: list[Any] | None = None
    artifacts: tuple[str, ...] = field(default_factory=tuple)


@runtime_checkable
class Kind(Protocol):
    """A kind of run: its name (the first folder of its records), how it plans a stored request again,
    how it trains a plan, and how its result reads in a progress line."""

    name: str

    def replan(self, request: Mapping[str, Any], settings: Settings) -> Plan: ...

    def train(self, plan: Plan, context: RunContext) -> Outcome: ...

    def describe(self, record: rec.RunRecord) -> str: ...


def device_name(accelerator: Any) -> str:
    """``cuda (NVIDIA H100 ...) x8`` or ``cpu (2 threads) x1``: where a run computed."""
    import torch

    processes = getattr(accelerator, "num_processes", 1)
    if accelerator is not None and accelerator.device.type == "cuda":
        return f"cuda ({torch.cuda.get_device_name(accelerator.device)}) x{processes}"
    return f"cpu ({torch.get_num_threads()} threads) x{processes}"


@contextlib.contextmanager
def thread_count(threads: int) -> Iterator[int]:
    """Compute with ``threads`` intra-op threads for the block, then give back the count there was."""
    import torch

    before = torch.get_num_threads()
    if threads != before:
        torch.set_num_threads(threads)
    try:
        yield threads
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)


def _main(accelerator: Any) -> bool:
    return accelerator is None or accelerator.is_main_process


def _claim(plan_: Plan, root: Path, force: bool, accelerator: Any, stack: contextlib.ExitStack,
           wait: bool) -> rec.RunRecord | None:
    """Take the run's lock (main process) and return its existing record, if any, to every process."""
    found = None
    if _main(accelerator):
        try:
            stack.enter_context(rec.run_lock(plan_.key, root, wait=wait, log=progress.say))
        except OSError as exc:
            # a results root this process may not write (read-only mount, another user's folder): its
            # records can still be reused, as reading one needs no lock (records are written atomically)
            existing = None if force or exc.errno not in _CANNOT_WRITE else rec.find_record(root, plan_.key)
            if existing is None:
                raise
            found = existing.to_dict()
        else:
            existing = None if force else rec.find_record(root, plan_.key)
            found = existing.to_dict() if existing is not None else None
    if accelerator is not None and accelerator.num_processes > 1:
        from accelerate.utils import broadcast_object_list

        box = [found]
        broadcast_object_list(box, from_process=0)
        found = box[0]
    return rec.RunRecord.from_dict(found) if found is not None else None


def _without(payload: Mapping[str, Any], paths: Sequence[str]) -> dict[str, Any]:
    """``payload`` without the entries at the dotted ``paths`` (absent ones are no difference)."""
    out = dict(payload)
    for path in paths:
        head, _, rest = path.partition(".")
        if rest and isinstance(out.get(head), Mapping):
            out[head] = _without(out[head], [rest])
        elif not rest:
            out.pop(head, None)
    return out


def _entries(payload: Mapping[str, Any], paths: Sequence[str]) -> dict[str, Any]:
    """The values at the dotted ``paths`` of ``payload``; ``"as requested"`` where there is none (a kind may
    write the entry only where the machine departs from the request)."""
    values = {}
    for path in paths:
        node: Any = payload
        for part in path.split("."):
            node = node.get(part, "as requested") if isinstance(node, Mapping) else "as requested"
        values[path] = node
    return values


def _recorded_elsewhere(plan_: Plan, root: Path) -> tuple[rec.RunRecord | None, str]:
    """In a build from recorded results: the record of this very run made on a machine that decided the
    plan's machine entries (``Plan.machine``: precision) otherwise — a CPU with native bf16 computes what this
    one would compute in fp32 — and the note that says so; (None, "") when there is none.

    A recorded build renders what was recorded, wherever it is rendered: without this, the same recording
    would render on one CPU type and stop on another. Every other entry of the configuration must match."""
    if not plan_.machine:
        return None, ""
    key = plan_.key
    found = [(record, note) for path in sorted(key.path(root).parent.parent.glob(f"*/{key.path(root).name}"))
             if (record := rec.read_record(path)).config is not None
             and (note := machine_difference(plan_, record.config)) is not None]
    if not found:
        return None, ""
    record, note = max(found, key=lambda found_: found_[0].created or "")
    return record, f"; {note}"


def machine_difference(plan_: Plan, config: Mapping[str, Any]) -> str | None:
    """``"recorded on a machine that decided …"`` when a recorded ``config`` differs from the plan's payload
    in its machine entries alone (``Plan.machine``: the same request, computed in another precision because
    the CPU decided so); None when anything else differs, or nothing does."""
    if not plan_.machine or (canonical_json(_without(config, plan_.machine))
                             != canonical_json(_without(plan_.payload, plan_.machine))):  # a tuple read back as a list
        return None
    recorded, here = _entries(config, plan_.machine), _entries(plan_.payload, plan_.machine)
    differ = ", ".join(f"{path} {recorded[path]} (this machine: {here[path]})" for path in plan_.machine
                       if recorded[path] != here[path])
    return f"recorded on a machine that decided {differ}" if differ else None


def _name_outputs(outcome: Outcome, key: RunKey, root: Path) -> None:
    """Put the names of the predictions file and the artifact folders into the record (every process)."""
    if outcome.predictions is not None:
        outcome.record.predictions = key.predictions_path(root).name
    final = key.artifacts_path(root)
    outcome.record.artifacts = {name: f"{final.name}/{name}" for name in outcome.artifacts}


def _publish(outcome: Outcome, key: RunKey, root: Path, workdir: Path) -> None:
    """Predictions (their digest into the record), then artifacts (the work folder renamed to ``seed<N>/``),
    then the record (main process).

    If any step fails (a full disk, a folder made read-only meanwhile), what this attempt published is
    taken back: no predictions file without its record, the artifacts back in the work folder, and no older
    record of the run left beside predictions it did not make."""
    predictions = key.predictions_path(root)
    final = key.artifacts_path(root)
    wrote_predictions = moved = False
    try:
        if outcome.predictions is not None:
            write_jsonl(predictions, outcome.predictions)
            wrote_predictions = True
            predictions.with_name(predictions.name + GZ).unlink(missing_ok=True)  # an older run's recorded copy
            # the record is the evidence for its predictions: every reader checks the file against this
            outcome.record.digests[predictions.name] = file_sha256(predictions, memo=False)
        if outcome.artifacts:
            if final.exists():  # left by an attempt killed between this rename and its record
                shutil.rmtree(final)
            workdir.rename(final)
            moved = True
        elif workdir.exists():
            shutil.rmtree(workdir)
        rec.write_record(outcome.record, root)
    except BaseException:
        with contextlib.suppress(OSError):
            if moved and not workdir.exists():
                final.rename(workdir)
        if wrote_predictions:
            with contextlib.suppress(OSError):
                predictions.unlink()
            with contextlib.suppress(OSError):  # a forced rerun's older record: its predictions are gone
                key.path(root).unlink()
        raise


def run(kind: Kind, plan_: Plan, settings: Settings, accelerator: Any = None, force: bool = False,
        wait: bool = True, threads: int | None = None) -> tuple[rec.RunRecord, bool]:
    """Reuse the record of ``plan_`` or train it; return (record, reused).

    ``wait=False``: a run another process holds raises :class:`medibio.runs.records.RunLockedError` at once.
    ``threads``: the CPU threads of a run started inside another run (it keeps its parent's count); by
    default the process's count, capped while the session shares the cores
    (:meth:`medibio.core.settings.Settings.run_threads`). A session rendering from recorded results
    (``settings.recorded``) raises :class:`NotRecordedError` where it would train.
    """
    root = settings.results_root
    key = plan_.key
    with contextlib.ExitStack() as stack:
        record = _claim(plan_, root, force, accelerator, stack, wait)
        elsewhere = ""
        if record is None and settings.recorded is not None:
            record, elsewhere = _recorded_elsewhere(plan_, root)
        if record is not None:
            if _main(accelerator):
                where = record.path(root) if elsewhere else key.path(root)
                progress.say(f"= {plan_.label}: reused its record ({kind.describe(record)}; {where}){elsewhere}",
                             kind="run", reused=True)
            reused = True
        else:
            if settings.recorded is not None:
                raise NotRecordedError(
                    f"{plan_.label}: no recorded run {key.kind}/{key.profile}/{key.model_tag}/{key.variant}/"
                    f"{key.dataset} seed {key.seed} with config {key.config_digest} (looked for {key.path(root)}, "
                    f"seeded from {settings.recorded}); a build from recorded results never trains. Record the "
                    "run (`medibio results record`) or build without --from")
            if _main(accelerator):
                progress.say(f"▶ {plan_.label}: training (config {key.config_digest})")
            import torch

            accelerator = precision.made(accelerator)
            count = threads or min(torch.get_num_threads(), settings.run_threads() or torch.get_num_threads())
            workdir = key.work_path(root)
            with thread_count(count), precision.attention_kernels():
                context = RunContext(plan_, settings, accelerator, workdir, count,
                                     lambda message: progress.say(message) if _main(accelerator) else None)
                outcome = kind.train(plan_, context)
            record = outcome.record
            _name_outputs(outcome, key, root)
            if _main(accelerator):
                _publish(outcome, key, root, workdir)
                mark = "✓" if record.ok else "–"  # a skipped run is no finished run
                progress.say(f"{mark} {plan_.label}: {kind.describe(record)} ({record.wall_time_s or 0:.0f} s)",
                             kind="run", reused=False, seconds=record.wall_time_s)
            reused = False
        if accelerator is not None:
            accelerator.wait_for_everyone()
    return record, reused
