"""The run digest: equal configurations give equal digests, any change gives another one."""

from __future__ import annotations

import math

import pytest

from medibio.runs import identity


def test_digest_ignores_key_order_and_container_type() -> None:
    a = identity.digest({"lr": 1e-4, "caps": (800, 1000), "chain": ["STS-B"]})
    b = identity.digest({"chain": ("STS-B",), "caps": [800, 1000], "lr": 0.0001})
    assert a == b and len(a) == identity.DIGEST_LENGTH


def test_digest_changes_with_any_value() -> None:
    base = {"lr": 1e-4, "epochs": 2, "class_weighting": "none"}
    seen = {identity.digest(base)}
    for key, value in (("lr", 2e-4), ("epochs", 3), ("class_weighting", "balanced")):
        seen.add(identity.digest({**base, key: value}))
    assert len(seen) == 4


def test_digest_is_the_sha256_of_canonical_json() -> None:
    import hashlib

    payload = {"b": 1, "a": [1.5, None, True]}
    assert identity.canonical_json(payload) == '{"a":[1.5,null,true],"b":1}'
    assert identity.digest(payload) == hashlib.sha256(b'{"a":[1.5,null,true],"b":1}').hexdigest()[:12]


def test_non_finite_values_are_refused() -> None:
    with pytest.raises(ValueError, match="nan"):
        identity.digest({"lr": math.nan})


def test_files_fingerprint_relative_names_and_absent(tmp_path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "train.tsv").write_text("x\t1\n", encoding="utf-8")
    fp = identity.files_fingerprint([tmp_path / "d" / "train.tsv", tmp_path / "d" / "dev.tsv"], root=tmp_path)
    assert fp == {"d/dev.tsv": "absent",
                  "d/train.tsv": identity.file_sha256(tmp_path / "d" / "train.tsv")[:16]}
    (tmp_path / "d" / "train.tsv").write_text("x\t2\n", encoding="utf-8")
    assert identity.files_fingerprint([tmp_path / "d" / "train.tsv"], root=tmp_path) != {
        "d/train.tsv": fp["d/train.tsv"]}
