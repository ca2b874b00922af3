"""Time of ``medibio claims`` (every claim's verdict, the multi-bootstrap of its runs) before and after its
evidence is cached.

Runs ``python -m medibio claims --profile P --results-root R --json`` as a child process three times: with an
empty evidence cache (``MEDIBIO_CACHE`` a fresh folder: every prediction file scored, every multi-bootstrap
drawn), then again with that cache filled, and, with ``--before CHECKOUT``, once from another checkout (e.g. the
commit before the cache, with the same Python environment). For each: wall time and CPU time (user + system of
the child), and whether its verdicts and intervals equal the first run's. Prints the CPU's ``lscpu`` model name,
its cores and the load average, since on a shared machine wall time measures the load too.

    python -m benchmarks.claims_speed --results-root reference --before /work/base
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _cpu_model() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    except OSError:
        return "unknown (no lscpu)"
    return next((line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("Model name")),
                "unknown")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_claims(checkout: Path, args: argparse.Namespace, cache: Path) -> tuple[dict, float, float]:
    """One ``medibio claims --json`` from ``checkout``: (its JSON, wall seconds, CPU seconds)."""
    env = {**os.environ, "MEDIBIO_CACHE": str(cache), "PYTHONPATH": str(checkout)}
    command = [sys.executable, "-m", "medibio", "claims", "--profile", args.profile, "--results-root",
               str(Path(args.results_root).resolve()), "--json"]
    cpu, start = _children_cpu(), time.perf_counter()
    done = subprocess.run(command, cwd=checkout, env=env, capture_output=True, text=True, check=False)
    wall, cpu = time.perf_counter() - start, _children_cpu() - cpu
    if done.returncode != 0:
        sys.exit(f"claims_speed: `{' '.join(command)}` in {checkout} failed ({done.returncode}): "
                 f"{done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout), wall, cpu


def evidence(found: dict) -> dict[str, tuple]:
    """Each claim's verdict with our difference, interval and p-value (and those of the rows beside it)."""
    return {c["id"]: (c["verdict"], *(c["ours"].get(k) for k in ("diff", "low", "high", "p")),
                      tuple((b["diff"], b["low"], b["high"], b["p"]) for b in c["ours"].get("beside", [])))
            for c in found["claims"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", default="cpu")
    parser.add_argument("--results-root", default=str(REPO / "reference"))
    parser.add_argument("--before", type=Path, default=None, help="another checkout to time the same command from")
    args = parser.parse_args()

    print(f"CPU: {_cpu_model()}, {os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f} at the start")
    with tempfile.TemporaryDirectory(prefix="claims-speed-") as tmp:
        cache = Path(tmp)
        runs = [("empty cache", REPO), ("cache filled", REPO)]
        if args.before is not None:
            runs.append((f"before ({args.before})", args.before.resolve()))
        first = None
        for label, checkout in runs:
            found, wall, cpu = run_claims(checkout, args, cache / ("before" if checkout != REPO else "cache"))
            same = "" if first is None else (", same verdicts and intervals" if evidence(found) == first
                                             else ", DIFFERENT verdicts or intervals")
            first = first or evidence(found)
            print(f"{label}: wall {wall:.1f} s, CPU {cpu:.1f} s{same}")
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
