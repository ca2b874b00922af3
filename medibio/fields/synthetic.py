"""Synthetic S2ORC-like metadata shards for the scale benchmark (and larger-than-sample tests).

Realism where it matters for speed and for the counts: every line is a real record of the S2ORC sample
(so line length, key set and gzip ratio are real) with a fresh ``paper_id`` and a field list drawn from the
sample's empirical field-set distribution (which carries the field marginals, the null rate and the
multi-field rate); a small share ``mix`` of papers instead gets two fields drawn independently from the
marginals, so that every pair of fields occurs. A share ``dup_rate`` of lines repeats an earlier id.
Generation is vectorised (numpy draws, pre-serialised line pieces) and shards are written in parallel;
the result is cached under ``cache_root()/fields_synth/<key>/``.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from medibio.core.atomic import atomic_open, write_json
from medibio.core.paths import cache_root
from medibio.fields.cooccurrence import count_fields_python
from medibio.fields.fos import FIELDS, fields_of

_ID, _FOS = "@@ID@@", "@@FOS@@"
VERSION = 1


@dataclass(frozen=True)
class SynthConfig:
    papers: int = 10_000_000
    shard_papers: int = 500_000
    seed: int = 0
    mix: float = 0.02
    dup_rate: float = 0.001
    compresslevel: int = 1

    def key(self, sample_sha: str) -> str:
        raw = json.dumps({**asdict(self), "sample": sample_sha, "v": VERSION}, sort_keys=True)
        return hashlib.sha256(raw.encode()).hexdigest()[:16]


@dataclass
class Profile:
    """Pieces of real lines and the field-set distribution of the sample."""

    pre: list[str]
    mid: list[str]
    post: list[str]
    masks: np.ndarray
    probs: np.ndarray
    marginals: np.ndarray


def profile(sample: Path) -> Profile:
    """Line templates and field-set frequencies from a real S2ORC metadata sample."""
    pre, mid, post = [], [], []
    with open(sample, encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            rec = json.loads(line)
            rec["paper_id"] = _ID
            rec["mag_field_of_study"] = _FOS
            text = json.dumps(rec, ensure_ascii=False)
            a, rest = text.split(json.dumps(_ID), 1)
            b, c = rest.split(json.dumps(_FOS), 1)
            pre.append(a)
            mid.append(b)
            post.append(c + "\n")
    counts = count_fields_python(sample)
    masks = np.array(sorted(counts.masks), dtype=np.int64)
    probs = np.array([counts.masks[m] for m in masks], dtype=float)
    probs /= probs.sum()
    n_i = counts.n_i().to_numpy(dtype=float)
    return Profile(pre, mid, post, masks, probs, n_i / n_i.sum())


def _fos_json(mask: int) -> str:
    return "null" if mask == 0 else json.dumps(fields_of(mask))


def _write_shard(args: tuple[Path, Profile, SynthConfig, int, int]) -> str:
    path, prof, cfg, start, n = args
    rng = np.random.default_rng([cfg.seed, start])
    tmpl = rng.integers(0, len(prof.pre), n)
    masks = prof.masks[rng.choice(len(prof.masks), n, p=prof.probs)]
    mixed = rng.random(n) < cfg.mix
    k = int(mixed.sum())
    a = rng.choice(len(FIELDS), k, p=prof.marginals)
    b = rng.choice(len(FIELDS), k, p=prof.marginals)
    masks[mixed] = (1 << a) | (1 << b)
    ids = np.arange(start, start + n, dtype=np.int64) + 100_000_000
    dup = rng.random(n) < cfg.dup_rate
    dup[0] = False
    ids[dup] = ids[np.maximum(np.flatnonzero(dup) - rng.integers(1, 1000, int(dup.sum())), 0)]
    fos = {int(m): _fos_json(int(m)) for m in np.unique(masks)}
    pre, mid, post = prof.pre, prof.mid, prof.post
    lines = [f'{pre[t]}"{i}"{mid[t]}{fos[m]}{post[t]}' for t, i, m in zip(tmpl.tolist(), ids.tolist(),
                                                                         masks.tolist(), strict=True)]
    with atomic_open(path, "wb") as fh, gzip.GzipFile(fileobj=fh, mode="wb", mtime=0,
                                                      compresslevel=cfg.compresslevel) as gz:
        gz.write("".join(lines).encode("utf-8"))
    return path.name


def generate(sample: Path, cfg: SynthConfig, root: Path | None = None, workers: int = 2) -> Path:
    """Folder of ``metadata_NNNN.jsonl.gz`` shards for ``cfg`` (reused when already complete)."""
    sample_sha = hashlib.sha256(Path(sample).read_bytes()).hexdigest()[:16]
    out = (root or cache_root() / "fields_synth") / cfg.key(sample_sha)
    done = out / "done.json"
    if done.exists():
        return out
    prof = profile(Path(sample))
    jobs = []
    for s, start in enumerate(range(0, cfg.papers, cfg.shard_papers)):
        path = out / f"metadata_{s:04d}.jsonl.gz"
        if not path.exists():
            jobs.append((path, prof, cfg, start, min(cfg.shard_papers, cfg.papers - start)))
    if workers > 1 and len(jobs) > 1:
        with ProcessPoolExecutor(workers) as pool:
            list(pool.map(_write_shard, jobs))
    else:
        for job in jobs:
            _write_shard(job)
    write_json(done, {**asdict(cfg), "sample": str(sample), "sample_sha": sample_sha})
    return out
