"""Time of ``make book FROM=reference`` on a fresh clone, part by part beside the estimate it printed.

Clones this repository at a commit (HEAD: committed work only) into a folder beside it, so that the clone finds the data
root where the checkout does (``../shared/data``), installs it (``make install``) and renders the ``cpu`` book
from the recorded runs of ``reference/`` into an empty results root and evidence cache. Prints the CPU (``lscpu``
model name and the instruction sets that decide precision and speed), the cores, the load average before and
after, then each part of the build (every chapter, the HTML, the run pages) with the estimate's time for it,
the time it took and their ratio, and the totals. Compare figures only back to back on one machine; the README
lists the CPU types the target holds for, and docs/benchmarks.md keeps what was measured where.

    python -m benchmarks.book_speed                  # about 3 minutes on 2 cores
    python -m benchmarks.book_speed --commit c9040a8 # another commit, e.g. back to back with HEAD
    python -m benchmarks.book_speed --keep           # keep the clone (its book is in _build/html)
    python -m benchmarks.book_speed --slower 2       # as on a CPU twice as slow, emulated
    python -m benchmarks.book_speed --slower 1.6     # as on a CPU 1.6 times as slow

``--slower X`` stands in for a CPU type that is not at hand: busy processes pinned to each core take 1 - 1/X of
it beside the build (the ``make install`` before it runs alone), so each of the build's threads, serial or side by
side, gets about 1/X of a core: Python, NumPy and torch alike take about X times as long. Whole busy processes
take their fair share of a core; a fraction of one (X = 1.6: 0.375) is a process that spins while the CPU time it
has used is below that fraction of the time it has lived, and sleeps otherwise. The kernel's autogroups are
turned off meanwhile where root may, so that a process of the build gets that share whichever session it runs in.
(A control group's CPU quota would not do: it limits the cores' total, and leaves one thread alone at full speed.)
It is an emulation of a slower machine, not a measurement on one: name it so beside its figures. The estimate
inside the build measures a chapter kernel's imports beside the busy processes; the benchmark measures the training step
there too before the build, which tells how slow the emulated machine is by the step that the other CPU types
have on record.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# the CPU flags that decide how fast and in which precision this project computes
_FLAGS = (("amx_bf16", "AMX"), ("avx512_bf16", "AVX-512 bf16"), ("avx512f", "AVX-512"), ("avx2", "AVX2"))


def cpu() -> str:
    """``lscpu``'s model name, the flags of :data:`_FLAGS` it has, and the usable cores."""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    except OSError:
        return f"unknown (no lscpu), {os.cpu_count()} cores"
    fields = dict(line.split(":", 1) for line in out.splitlines() if ":" in line)
    flags = set(fields.get("Flags", "").split())
    has = [name for flag, name in _FLAGS if flag in flags]
    return f"{fields.get('Model name', '?').strip()} ({', '.join(has) or 'none of AVX2/AVX-512/AMX'}), " \
           f"{len(os.sched_getaffinity(0))} cores"


def parts(report: dict) -> list[tuple[str, float | None, float]]:
    """(part, estimated seconds or None, seconds taken) of every part of a build's report (``build.json``): each
    executed chapter and the run pages beside the estimate's seconds for them (kept unrounded in the report),
    then the notebooks and the HTML (which the estimate does not split out)."""
    estimated = report.get("estimated", {})
    out: list[tuple[str, float | None, float]] = [
        (c["slug"], estimated.get(c["slug"]), c["seconds"]) for c in report["chapters"] if c["status"] == "executed"]
    out += [("notebooks", None, report["execute_seconds"]), ("html", None, report["html_seconds"])]
    if report.get("run_pages"):
        out.append((f"run pages ({report['run_pages']})", estimated.get("run pages"), report["run_pages_seconds"]))
    return out


# pinned to core argv[1], busy for the fraction argv[2] of the time it has lived (1: always), in slices of 1 ms
_SPIN = """import os, sys, time
os.sched_setaffinity(0, {int(sys.argv[1])})
share = float(sys.argv[2])
born, used = time.monotonic(), time.thread_time()
while True:
    ahead = time.thread_time() - used - share * (time.monotonic() - born)
    if ahead > 0:
        time.sleep(ahead / share)
    else:
        until = time.thread_time() + 0.001
        while time.thread_time() < until:
            pass
"""


def shares(factor: float) -> list[float]:
    """The busy processes per core that leave the build ``1 / factor`` of it: ``floor(factor) - 1`` whole ones,
    then one busy for the rest (a fraction below a fair share, so it gets all it asks for)."""
    if not factor >= 1:
        raise ValueError(f"--slower {factor}: a factor of at least 1 (1: as fast as this CPU)")
    whole = math.floor(factor)
    rest = 1 - whole / factor
    return [1.0] * (whole - 1) + ([round(rest, 6)] if rest > 1e-6 else [])


def busy(factor: float) -> list[subprocess.Popen]:
    """The busy processes of :func:`shares` pinned to each usable core, each in a session of its own (an autogroup
    where the kernel groups by session), at the build's priority: every thread of the build then gets
    ``1 / factor`` of its core, as on a CPU that many times slower, serial work included."""
    return [subprocess.Popen([sys.executable, "-c", _SPIN, str(core), str(share)], start_new_session=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for core in sorted(os.sched_getaffinity(0)) for share in shares(factor)]


_AUTOGROUP = Path("/proc/sys/kernel/sched_autogroup_enabled")


@contextlib.contextmanager
def per_process_fairness() -> Iterator[str]:
    """Turn the kernel's autogroups off while the block runs (root), and say what was done. With them on, the
    scheduler shares a core between sessions before processes, so the build's worker processes (one session)
    would get a smaller share beside the busy processes than its chapters' kernels (a session each): the
    emulation would slow some parts more than others."""
    try:
        before = _AUTOGROUP.read_text().strip()
    except OSError:
        yield "no autogroups here"
        return
    if before == "0":
        yield "autogroups off"
        return
    try:
        _AUTOGROUP.write_text("0\n")
    except OSError:
        yield "autogroups on (not root): the worker processes get a smaller share than the chapters"
        return
    try:
        yield "autogroups turned off for the build"
    finally:
        _AUTOGROUP.write_text(f"{before}\n")


def clock(seconds: float) -> str:
    """``seconds`` as whole minutes and seconds (299.6 s: "5 min 0 s")."""
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s"


def cpu_speed() -> str:
    """This CPU's fp32 training step (the figure the other CPU types have on record, docs/benchmarks.md) and a
    chapter kernel's imports (what the estimate measures), in wall time under the load of the moment."""
    from medibio.core.speed import kernel_import_seconds, training_step_seconds

    return (f"fp32 training step {training_step_seconds('no') * 1000:.0f} ms, a kernel's imports "
            f"{kernel_import_seconds():.2f} s")


def run(command: list[str], cwd: Path, log: Path) -> float:
    """``command`` in ``cwd``, its output into ``log``; its wall seconds (exit on failure, naming the log)."""
    start = time.perf_counter()
    with log.open("w", encoding="utf-8") as out:
        done = subprocess.run(command, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, check=False,
                              env={k: v for k, v in os.environ.items() if k not in ("MEDIBIO_RESULTS", "MEDIBIO_CACHE")})
    if done.returncode != 0:
        sys.exit(f"book_speed: `{' '.join(command)}` failed ({done.returncode}); its output: {log}")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--into", type=Path, default=None,
                        help="the clone's folder (default: book-speed-<commit> beside this checkout; must not exist)")
    parser.add_argument("--keep", action="store_true", help="keep the clone afterwards")
    parser.add_argument("--commit", default="HEAD", help="the commit to build (default: HEAD)")
    parser.add_argument("--slower", type=float, default=1.0, metavar="X",
                        help="busy processes take 1 - 1/X of each core beside the build: a CPU about X times slower, "
                             "emulated (default 1: none)")
    args = parser.parse_args()
    try:
        shares(args.slower)  # a factor it cannot emulate is said before the clone and its install
    except ValueError as exc:
        parser.error(str(exc))
    commit = subprocess.run(["git", "rev-parse", "--short", args.commit], cwd=REPO, capture_output=True, text=True,
                            check=True).stdout.strip()
    clone = (args.into or REPO.parent / f"book-speed-{commit}").resolve()
    if clone.exists():
        sys.exit(f"book_speed: {clone} exists; remove it or pass --into another folder")
    emulated = args.slower != 1
    shown = f"; busy processes take {1 - 1 / args.slower:.3f} of each core beside the build (a CPU about " \
            f"{args.slower:g}x slower, emulated)" if emulated else ""
    print(f"CPU: {cpu()}{shown}; load average {os.getloadavg()[0]:.1f} at the start; commit {commit}")
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(clone)], check=True)
    subprocess.run(["git", "checkout", "--quiet", commit], cwd=clone, check=True)
    try:
        install = run(["make", "install"], clone, clone.parent / f"{clone.name}-install.log")
        book_log = clone.parent / f"{clone.name}-book.log"
        with per_process_fairness() if emulated else contextlib.nullcontext("") as fairness:
            spinning = busy(args.slower)
            try:
                measured = cpu_speed()
                book = run(["make", "book", "FROM=reference"], clone, book_log)
            finally:
                for process in spinning:
                    process.kill()
        if fairness:
            print(f"scheduler: {fairness}")
        log = book_log.read_text(encoding="utf-8")
        report = json.loads((clone / "results" / "book" / "cpu" / "build.json").read_text(encoding="utf-8"))
        print(f"make install {install:.0f} s; make book FROM=reference {clock(book)}; "
              f"load average {os.getloadavg()[0]:.1f} at the end")
        print(f"{'part':<40} {'estimated':>9} {'took':>6} {'ratio':>6}")
        for name, expected, taken in parts(report):
            shown = f"{expected:>8.1f}s" if expected is not None else f"{'':>9}"
            ratio = f"{taken / expected:>6.2f}" if expected else ""
            print(f"{name:<40} {shown} {taken:>5.1f}s {ratio}")
        total = re.search(r"this build took .*", log)
        print(total.group(0) if total else "no total in the log")
        work = re.search(r"a chapter kernel's imports take ([\d.]+ s) on this CPU now", log)
        print(f"a kernel's imports measured by the estimate: {work.group(1) if work else '?'}; before the build, "
              f"beside the same load: {measured}")
    finally:
        if not args.keep:
            shutil.rmtree(clone, ignore_errors=True)


if __name__ == "__main__":
    main()
