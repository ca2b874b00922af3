"""Run one planned job exactly once: reuse its record, else train it under its lock and write the outputs.

Every kind of run (BLURB fine-tuning, SciERC) goes through :func:`run_once`, so the rules are the same for
all: the main process takes the run's lock and looks for a record with the run's key; every process learns
the answer (a broadcast); a found record is returned as it is; otherwise every process trains, the main
process writes the predictions first and the record last (both atomically), and all processes meet at a
barrier before leaving. The barrier is on both paths: processes of one ``accelerate launch`` then leave a
run together, and the lock is held until every process is past it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from medibio import cores
from medibio.runs.identity import RunKey

Train = Callable[[], tuple[Any, list[dict[str, Any]] | None]]


def claim(key: RunKey, results_root: Path, force: bool, accelerator: Any, stack: contextlib.ExitStack,
          wait: bool = True) -> Any:
    """Take the run's lock (main process) and return its existing record, if any, to every process;
    ``wait=False``: a lock another process holds raises :class:`medibio.runs.records.RunLockedError`."""
    from medibio import progress
    from medibio.runs import records as rec

    found = None
    if accelerator.is_main_process:
        stack.enter_context(rec.run_lock(key, results_root, wait=wait, log=progress.say))
        existing = None if force else rec.find_record(results_root, key)
        found = existing.to_dict() if existing is not None else None
    if accelerator.num_processes > 1:
        from accelerate.utils import broadcast_object_list

        box = [found]
        broadcast_object_list(box, from_process=0)
        found = box[0]
    return rec.RunRecord.from_dict(found) if found is not None else None


def run_once(key: RunKey, results_root: Path, force: bool, accelerator: Any, label: str, train: Train,
             score_text: Callable[[Any], str], wait: bool = True) -> Any:
    """Reuse the record of ``key`` or call ``train`` (which returns the record and its test predictions, or
    ``None`` when the run has none) and write both; announce either on the progress stream."""
    from medibio import progress
    from medibio.atomic import write_jsonl
    from medibio.runs import records as rec

    with contextlib.ExitStack() as stack:
        record = claim(key, results_root, force, accelerator, stack, wait)
        if record is not None:
            if accelerator.is_main_process:
                progress.say(f"= {label}: reused its record ({score_text(record)}; {key.path(results_root)})",
                             kind="run", reused=True)
        else:
            if accelerator.is_main_process:
                progress.say(f"▶ {label}: training (config {key.config_digest})")
            threads = cores.follow()  # fixed for the whole run, and recorded (medibio.cores)
            record, predictions = train()
            record.cpu_threads = threads
            if accelerator.is_main_process:
                if predictions is not None:
                    write_jsonl(key.predictions_path(results_root), predictions)
                rec.write_record(record, results_root)
                progress.say(f"✓ {label}: {score_text(record)} ({record.wall_time_s or 0:.0f} s)", kind="run",
                             reused=False, seconds=record.wall_time_s)
        accelerator.wait_for_everyone()
    return record
