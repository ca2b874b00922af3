"""Speed of test-example resampling (``medibio.results.significance``) on the largest BLURB test sets.

For each dataset: builds the per-unit statistics of synthetic predictions (the gold with a share of the
labels replaced at random, one prediction set per "seed"), then times, with ``--resamples`` resamples:

* the percentile-bootstrap interval of one run;
* the paired bootstrap of 1 vs 1 and of 3 vs 3 seeds;
* approximate randomisation of 1 vs 1;
* for reference, re-running ``metrics.evaluate`` (seqeval for NER) on ``--naive`` resamples, extrapolated
  linearly to ``--resamples`` (said in the output).

    python -m benchmarks.significance_speed --datasets JNLPBA,BC2GM,ChemProt --resamples 1000
"""

from __future__ import annotations

import argparse
import random
import time


def _perturbed(spec, references, rng: random.Random, share: float):
    if spec.is_token_task:
        return [[rng.choice(spec.labels) if rng.random() < share else t for t in r] for r in references]
    return [rng.choice(spec.labels) if rng.random() < share else r for r in references]


def _timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", default="JNLPBA,BC2GM,ChemProt")
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--naive", type=int, default=10, help="resamples re-scored by metrics.evaluate")
    parser.add_argument("--data-root", default=None)
    args = parser.parse_args()

    import numpy as np

    from medibio.results import significance as S
    from medibio.tasks import metrics, registry, units
    from medibio.tasks.predictions import load_gold

    b = args.resamples
    for name in args.datasets.split(","):
        spec = registry.get(name, "blurb")
        gold = load_gold(spec.name, "test", args.data_root)
        rng = random.Random(0)
        preds = [_perturbed(spec, gold.references, rng, share) for share in (0.05, 0.06, 0.05, 0.06, 0.05, 0.06)]
        stats, t_stats = _timed(lambda g=gold, p=preds: [units.unit_stats(g.dataset, g.references, x, g.ids)
                                                          for x in p])
        _, t_iv = _timed(lambda s=stats: S.bootstrap_interval(s[0], b))
        _, t_pb = _timed(lambda s=stats: S.paired_test(s[0], s[1], b))
        _, t_pb3 = _timed(lambda s=stats: S.paired_test(s[0::2], s[1::2], b))
        _, t_ar = _timed(lambda s=stats: S.paired_test(s[0], s[1], b, method="randomization"))
        draws = np.random.default_rng(0).integers(0, len(gold.ids), size=(args.naive, len(gold.ids)))

        def naive(g=gold, p=preds[0], d=draws):
            for row in d:
                metrics.evaluate(g.dataset, [g.references[i] for i in row], [p[i] for i in row])

        _, t_naive = _timed(naive)
        print(f"{spec.name}: {len(gold.ids)} examples, {stats[0].n_units} {stats[0].unit}s; "
              f"unit statistics {t_stats / len(preds):.2f} s per run; {b} resamples: interval {t_iv:.2f} s, "
              f"paired bootstrap 1v1 {t_pb:.2f} s, 3v3 {t_pb3:.2f} s, randomisation 1v1 {t_ar:.2f} s; "
              f"metrics.evaluate per resample {t_naive / args.naive:.3f} s "
              f"(x{b} = {t_naive / args.naive * b:.0f} s, extrapolated)")


if __name__ == "__main__":
    main()
