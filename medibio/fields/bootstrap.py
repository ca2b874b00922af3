"""How far the fields a claim names lead the others in co-occurrence with one field, with a bootstrap over
papers (the "medicine-fields" claim's evidence)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from medibio.results.significance import VERDICT_RESAMPLES
from medibio.tasks.bootstrap import CONFIDENCE, bootstrap_p, order_interval


def field_margin(masks: dict[int, int], fields: Sequence[str], field: str, claimed: Sequence[str],
                 resamples: int = VERDICT_RESAMPLES, seed: int = 0,
                 confidence: float = CONFIDENCE) -> tuple[float, float, float, float, str]:
    """How far the claimed neighbours of ``field`` lead the rest: min C(field, claimed) − max C(field, other),
    in points of C × 100, with a bootstrap over papers (interval and p from the same draws, as for every
    claim). ``masks`` maps a bit mask of fields (bit i: ``fields[i]``) to its number of papers, as
    :class:`medibio.fields.cooccurrence.FieldCounts` holds it. Returns (margin, low, high, p, the strongest
    other field)."""
    keys = np.array(sorted(masks), dtype=np.int64)
    weights = np.array([masks[k] for k in keys], dtype=float)
    bits = (keys[:, None] >> np.arange(len(fields))) & 1
    i = fields.index(field)
    inside = [fields.index(f) for f in claimed]
    outside = [j for j in range(len(fields)) if j != i and j not in inside]

    def margins(w: np.ndarray) -> np.ndarray:  # w: (resamples, masks) paper counts
        carry = w * bits[:, i]  # papers carrying `field`
        n_ij = carry @ bits  # (resamples, fields)
        c = 100 * n_ij / np.maximum(carry.sum(axis=1, keepdims=True), 1)
        return c[:, inside].min(axis=1) - c[:, outside].max(axis=1)

    rng = np.random.default_rng(seed)
    total = int(weights.sum())
    observed = float(margins(weights[None, :])[0])
    draws = rng.multinomial(total, weights / total, size=resamples).astype(float)
    dist = margins(draws)
    low, high = order_interval(dist, confidence)
    c_obs = (weights * bits[:, i]) @ bits
    rival = fields[max(outside, key=lambda j: c_obs[j])]
    return observed, low, high, bootstrap_p(dist), rival

