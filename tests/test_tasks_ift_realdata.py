"""STS-B and SICK from the real data root: counts from the manifests, schema, labels; BLURB fallback."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from medibio.tasks import loaders

pytestmark = pytest.mark.realdata


def test_stsb_counts_and_labels(data_root: Path):
    ds = loaders.load_task("STS-B", data_root=data_root)
    assert {k: len(v) for k, v in ds.items()} == {"train": 5749, "dev": 1500, "test": 1379}
    assert list(ds["train"].features) == ["id", "text", "text_pair", "label"]
    for split in ds.values():
        assert all(0.0 <= x <= 5.0 for x in split["label"])
        assert len(set(split["id"])) == len(split)
    first = ds["train"][0]
    assert first["text"] == "A plane is taking off." and first["text_pair"] == "An air plane is taking off."
    assert first["label"] == 5.0


def test_sick_relatedness_and_entailment(data_root: Path):
    rel = loaders.load_task("SICK-R", data_root=data_root)
    assert {k: len(v) for k, v in rel.items()} == {"train": 4439, "dev": 495, "test": 4906}
    assert all(1.0 <= x <= 5.0 for x in rel["train"]["label"])
    ent = loaders.load_task("SICK-E", data_root=data_root)
    counts = Counter(label for split in ent.values() for label in split["label"])
    assert counts == {"NEUTRAL": 5595, "ENTAILMENT": 2821, "CONTRADICTION": 1424}
    assert ent["train"][0]["id"] == rel["train"][0]["id"] == "sick-1"
    assert rel["train"][0]["label"] == 4.5


def test_blurb_dataset_as_intermediate_task(data_root: Path):
    ds = loaders.load_task("BIOSSES", data_root=data_root)
    assert {k: len(v) for k, v in ds.items()} == {"train": 64, "dev": 16, "test": 20}
