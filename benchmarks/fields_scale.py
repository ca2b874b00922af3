"""Scale benchmark of the field co-occurrence pass (issue #4): DuckDB vs a plain-Python baseline.

Generates (or reuses from the cache) synthetic S2ORC-like metadata shards (gzip JSONL; real sample lines
with synthetic ids and field lists, see ``medibio.fields.synthetic``), then measures in fresh child
processes:

* the DuckDB pass (``count_fields``) over all papers;
* the plain-Python reference (``count_fields_python``: ``json.loads`` per line, dict of ids) over the
  first ``--baseline-papers`` papers, extrapolated linearly to the full size (said in the output).

For each: wall time, CPU time (user+sys of the process, all threads), papers/s by wall and per CPU-second,
peak RSS. The projection for S2ORC's 81.1M papers is given two ways: at the measured wall rate (depends on
how busy the machine is) and from CPU time assuming ``--cores`` dedicated cores (the target: < 15 min on
2 cores, < 2 GiB). Results go to stdout and ``<results_root>/benchmarks/fields_scale.json``.

    python -m benchmarks.fields_scale --papers 1000000
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any

S2ORC_PAPERS = 81_100_000
TARGET_S = 15 * 60
TARGET_BYTES = 2 * 1024**3


def _rusage() -> tuple[float, int]:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime, r.ru_maxrss * 1024


def _child(kind: str, folder: str, opts: dict[str, Any], queue: Any) -> None:
    from medibio.fields.cooccurrence import count_fields, count_fields_python

    cpu0, rss0 = _rusage()
    t0 = time.perf_counter()
    if kind == "duckdb":
        res = count_fields(folder, memory_limit=opts["memory_limit"], threads=opts["threads"])
    else:
        res = count_fields_python(folder, limit=opts["limit"])
    wall = time.perf_counter() - t0
    cpu1, rss1 = _rusage()
    queue.put({"kind": kind, "records": res.records, "papers": res.papers, "wall_s": wall, "cpu_s": cpu1 - cpu0,
               "peak_rss": rss1, "start_rss": rss0, "masks": len(res.masks)})


def measure(kind: str, folder: Path, **opts: Any) -> dict[str, Any]:
    """Run one pass in a fresh process (clean peak-RSS figure) and return its measurements."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(kind, str(folder), opts, queue))
    proc.start()
    out = queue.get()
    proc.join()
    out["papers_per_s"] = out["records"] / out["wall_s"]
    out["papers_per_cpu_s"] = out["records"] / max(out["cpu_s"], 1e-9)
    return out


def _fmt_s(s: float) -> str:
    return f"{s:,.0f} s ({s / 60:,.1f} min)"


def main(argv: list[str] | None = None) -> int:
    from medibio.core.atomic import write_json
    from medibio.core.paths import data_root, results_root
    from medibio.fields.synthetic import SynthConfig, generate

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--papers", type=int, default=10_000_000, help="synthetic papers (default 10M)")
    ap.add_argument("--shard-papers", type=int, default=500_000, help="papers per shard")
    ap.add_argument("--baseline-papers", type=int, default=200_000, help="papers for the Python baseline")
    ap.add_argument("--threads", type=int, default=2, help="DuckDB threads")
    ap.add_argument("--cores", type=int, default=2, help="dedicated cores assumed by the CPU-time projection")
    ap.add_argument("--memory-limit", default="1GB", help="DuckDB memory limit")
    ap.add_argument("--sample", type=Path, default=None, help="real S2ORC metadata sample (JSONL)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=None, help="results JSON (default: results/benchmarks/)")
    args = ap.parse_args(argv)

    sample = args.sample or data_root() / "s2orc" / "v2020-07-05_metadata_sample.jsonl"
    t0 = time.perf_counter()
    folder = generate(sample, SynthConfig(papers=args.papers, shard_papers=args.shard_papers, seed=args.seed),
                      workers=2)
    gen_s = time.perf_counter() - t0
    shards = sorted(folder.glob("*.jsonl.gz"))
    gz_bytes = sum(p.stat().st_size for p in shards)
    print(f"data: {args.papers:,} papers in {len(shards)} shards, {gz_bytes / 1e9:.2f} GB gzip, {folder} "
          f"(generation/cache lookup {gen_s:.1f} s)")
    print(f"machine: {os.cpu_count()} CPUs visible, load average {os.getloadavg()[0]:.1f} at start "
          "(shared machine: wall times vary; CPU-time projections are steadier)")

    duck = measure("duckdb", folder, memory_limit=args.memory_limit, threads=args.threads)
    base = measure("python", folder, limit=min(args.baseline_papers, args.papers))
    scale = args.papers / base["records"]
    base_full_wall = base["wall_s"] * scale
    base_full_cpu = base["cpu_s"] * scale
    base_rss_full = base["start_rss"] + (base["peak_rss"] - base["start_rss"]) * scale

    rows = [
        ("DuckDB pass", duck, duck["wall_s"], duck["cpu_s"], duck["peak_rss"], ""),
        (f"Python baseline ({base['records']:,} papers, x{scale:,.1f} extrapolated)", base, base_full_wall,
         base_full_cpu, base_rss_full, " (extrapolated)"),
    ]
    print(f"\n{'pass':<58} {'papers/s':>12} {'papers/CPU-s':>13} {'wall (full)':>12} {'peak RSS':>14}")
    for name, m, wall, _cpu, rss, note in rows:
        print(f"{name:<58} {m['papers_per_s']:>12,.0f} {m['papers_per_cpu_s']:>13,.0f} {wall:>11,.1f}s "
              f"{rss / 2**20:>10,.0f} MiB{note}")
    ratio_wall = duck["papers_per_s"] / base["papers_per_s"]
    ratio_cpu = duck["papers_per_cpu_s"] / base["papers_per_cpu_s"]
    print(f"\nspeed-up DuckDB / Python: {ratio_wall:.1f}x by wall time, {ratio_cpu:.1f}x per CPU-second "
          "(the baseline uses one core; DuckDB uses all threads)")

    proj_wall = S2ORC_PAPERS / duck["papers_per_s"]
    proj_cpu = S2ORC_PAPERS / (duck["papers_per_cpu_s"] * args.cores)
    proj_base = S2ORC_PAPERS / base["papers_per_s"]
    print(f"\nprojection for {S2ORC_PAPERS / 1e6:.1f}M papers (linear in papers):")
    print(f"  DuckDB at measured wall rate:               {_fmt_s(proj_wall)}")
    print(f"  DuckDB from CPU time on {args.cores} dedicated cores:     {_fmt_s(proj_cpu)}  "
          f"(target < {TARGET_S / 60:.0f} min: {'met' if proj_cpu < TARGET_S else 'NOT met'})")
    print(f"  Python baseline at measured rate:           {_fmt_s(proj_base)}")
    print(f"  DuckDB peak RSS {duck['peak_rss'] / 2**20:,.0f} MiB (memory_limit {args.memory_limit}; target "
          f"< 2 GiB: {'met' if duck['peak_rss'] < TARGET_BYTES else 'NOT met'}); the id-dedup hash table grows "
          "with papers and spills to disk beyond memory_limit, so 81.1M-paper memory stays bounded but this "
          "run's RSS does not prove the spill cost")

    result = {"papers": args.papers, "shards": len(shards), "gzip_bytes": gz_bytes, "duckdb": duck,
              "python": base, "python_extrapolation_factor": scale, "speedup_wall": ratio_wall,
              "speedup_cpu": ratio_cpu, "projection_s": {"duckdb_wall": proj_wall, "duckdb_cpu": proj_cpu,
                                                           "python_wall": proj_base},
              "cores_assumed": args.cores, "threads": args.threads, "memory_limit": args.memory_limit,
              "load_average_start": os.getloadavg()[0]}
    out = args.out or results_root() / "benchmarks" / "fields_scale.json"
    write_json(out, result)
    print(f"\nwritten: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
