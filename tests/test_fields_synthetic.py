"""Synthetic shards for the scale benchmark keep the sample's field profile; DuckDB equals Python on them."""

from __future__ import annotations

from medibio.fields.analysis import from_counts
from medibio.fields.cooccurrence import count_fields, count_fields_python
from medibio.fields.synthetic import SynthConfig, generate


def test_synthetic_shards_realistic_and_cached(data_root, tmp_path):
    sample = data_root / "s2orc" / "v2020-07-05_metadata_sample.jsonl"
    cfg = SynthConfig(papers=6000, shard_papers=2500, dup_rate=0.01)
    folder = generate(sample, cfg, root=tmp_path, workers=1)
    assert sorted(p.name for p in folder.glob("*.jsonl.gz")) == [f"metadata_000{i}.jsonl.gz" for i in range(3)]
    assert generate(sample, cfg, root=tmp_path, workers=1) == folder  # cached
    c = count_fields(folder, threads=1)
    assert c.records == 6000 and 0 < c.duplicates < 120
    assert 0.02 < c.no_field / c.papers < 0.08  # sample: 4.7% without a field
    multi = sum(v for m, v in c.masks.items() if m & (m - 1)) / c.papers
    assert 0.05 < multi < 0.12  # sample: 7.1% multi-field
    assert count_fields_python(folder).masks == c.masks
    assert from_counts(c).groups["medicine"].related == ("Biology", "Chemistry", "Psychology")
