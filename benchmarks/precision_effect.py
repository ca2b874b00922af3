"""What fine-tuning in bf16 instead of fp32 does to F1, on one CPU (docs/pretraining.md, declared before the runs).

The two arms are the same model fine-tuned with the same seeds on the seven large BLURB sets, once under bf16
autocast and once in fp32, as ``medibio finetune --variant precision-bf16`` / ``precision-fp32`` wrote them.
It prints the declared primary statistic (bf16 − fp32, the mean over the sets of the per-set differences of
the seed means, with the claims' multi-bootstrap interval: test units and each arm's fine-tuning seeds
resampled), the per-set differences with their intervals, the seed-paired differences with a t-interval, and
each arm's time; ``--json`` writes the same as JSON.

    python -m benchmarks.precision_effect --results-root reference
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from medibio.core import profiles
from medibio.results.significance import System, multi_bootstrap, system_runs
from medibio.runs.records import load_records
from medibio.tasks import registry

DELTA = 1.0  # F1 points: the study's δ
ARMS = ("precision-bf16", "precision-fp32")


def measure(results_root: Path, profile: str = profiles.STUDY, model: str = "minilm",
            data_root: Path | None = None) -> dict[str, Any]:
    """The declared statistic and its secondary readings from the two arms' records under ``results_root``."""
    systems = [System(profile, model, arm) for arm in ARMS]
    pairs, missing = [], []
    for name in registry.LARGE_SETS:
        runs = [system_runs(results_root, s, name, data_root) for s in systems]
        if any(r is None for r in runs):
            missing.append(name)
            continue
        pairs.append((runs[0], runs[1]))
    if not pairs:
        raise SystemExit(f"no set has runs of both arms under {results_root}")
    statistics = {"mean": [a.dataset for a, _ in pairs], **{a.dataset: [a.dataset] for a, _ in pairs}}
    found = multi_bootstrap(pairs, statistics)
    scores = {arm: {(r.dataset, r.seed): r.score_test for r in load_records(results_root, profile=profile,
                                                                               kind="finetune")
                    if r.variant == arm and r.ok}
              for arm in ARMS}
    keys = sorted(set(scores[ARMS[0]]) & set(scores[ARMS[1]]))
    paired = np.array([scores[ARMS[0]][k] - scores[ARMS[1]][k] for k in keys])
    t_low, t_high = stats.t.interval(0.95, len(paired) - 1, loc=paired.mean(), scale=stats.sem(paired))
    times = {arm: sum(r.wall_time_s or 0.0 for r in load_records(results_root, profile=profile, kind="finetune")
                      if r.variant == arm) / 3600 for arm in ARMS}
    mean = found["mean"]
    return {
        "primary": {"diff": mean.diff, "low": mean.low, "high": mean.high, "p": mean.p_value,
                    "within_delta": mean.low > -DELTA and mean.high < DELTA, "delta": DELTA,
                    "resampled": mean.resampled, "draws": mean.resamples},
        "per_set": {d: {"diff": c.diff, "low": c.low, "high": c.high, "p": c.p_value}
                    for d, c in found.items() if d != "mean"},
        "seed_paired": {"pairs": len(paired), "mean": float(paired.mean()), "low": float(t_low),
                        "high": float(t_high), "sd": float(paired.std(ddof=1))},
        "hours": times, "missing_sets": missing,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results-root", type=Path, default=Path("reference"))
    parser.add_argument("--data-root", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()
    found = measure(args.results_root, data_root=args.data_root)
    p = found["primary"]
    print(f"bf16 - fp32, mean of {7 - len(found['missing_sets'])} sets: {p['diff']:+.2f} "
          f"[{p['low']:+.2f}, {p['high']:+.2f}], p {p['p']:.3f} ({p['draws']} draws; {p['resampled']}); "
          f"{'inside' if p['within_delta'] else 'not inside'} ±{p['delta']:g}")
    for name, c in found["per_set"].items():
        print(f"  {name:13s} {c['diff']:+6.2f} [{c['low']:+6.2f}, {c['high']:+6.2f}]  p {c['p']:.3f}")
    s = found["seed_paired"]
    print(f"seed-paired: {s['pairs']} (set, seed) pairs, mean {s['mean']:+.2f} [{s['low']:+.2f}, {s['high']:+.2f}] "
          f"(t), sd {s['sd']:.2f}")
    print("hours: " + ", ".join(f"{a} {h:.2f}" for a, h in found["hours"].items()))
    if found["missing_sets"]:
        print("missing: " + ", ".join(found["missing_sets"]))
    if args.json:
        args.json.write_text(json.dumps(found, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
