"""Related-field groups from C, union shares B and the analysis API."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from medibio.fields import fos
from medibio.fields.analysis import analyse, from_counts
from medibio.fields.cooccurrence import FieldCounts
from medibio.fields.groups import derive_groups, group_shares, union_papers
from medibio.fields.reader import SourceSpec

FIX = Path(__file__).parent / "fixtures" / "fields"


def _counts(masks: dict[tuple[str, ...], int]) -> FieldCounts:
    hist = {fos.mask_of(k): v for k, v in masks.items()}
    per_file = pd.DataFrame([{"file": "x", "issue": None, "unknown": None, "records": sum(masks.values())}])
    return FieldCounts(SourceSpec((Path("x"),), "jsonl", "f", "id"), hist, per_file)


COUNTS = _counts({
    ("Medicine",): 50, ("Medicine", "Biology"): 20, ("Medicine", "Chemistry"): 10, ("Medicine", "Psychology"): 5,
    ("Medicine", "Mathematics"): 8, ("Mathematics",): 30, ("Mathematics", "Computer Science"): 12,
    ("Mathematics", "Physics"): 4, ("Biology",): 7, ("History",): 9, (): 3,
})


def test_top_k_groups_are_disjoint_and_skip_other_seeds():
    c = COUNTS.c_matrix()
    groups = derive_groups(c, COUNTS.n_i(), ("Medicine", "Mathematics"), k=3)
    # Mathematics (8/93) beats Psychology (5/93) for medicine, but seeds are never related fields
    assert groups["medicine"].fields == ("Medicine", "Biology", "Chemistry", "Psychology")
    assert groups["medicine"].scores[0] == pytest.approx(20 / 93)
    # Medicine co-occurs with mathematics too, but it is a seed; only fields with C > 0 are kept
    assert groups["mathematics"].fields == ("Mathematics", "Computer Science", "Physics")


def test_min_share_and_direction():
    c = COUNTS.c_matrix()
    g = derive_groups(c, COUNTS.n_i(), ("Medicine",), k=3, min_share=0.11)
    assert g["medicine"].related == ("Biology",)
    col = derive_groups(c, COUNTS.n_i(), ("Medicine",), k=1, direction="col")
    # C[Chemistry, Medicine] = C[Psychology, Medicine] = 1: the tie goes to the field with more papers
    assert col["medicine"].related == ("Chemistry",)
    with pytest.raises(ValueError):
        derive_groups(c, COUNTS.n_i(), ("Medicine",), direction="diagonal")


def test_union_shares():
    a = from_counts(COUNTS)
    assert union_papers(COUNTS, a.groups["medicine"].fields) == 50 + 20 + 10 + 5 + 8 + 7
    shares = group_shares(COUNTS, a.groups).set_index("group")
    assert shares.loc["overlap", "papers"] == 8  # Medicine+Mathematics papers
    assert shares.loc["other", "papers"] == 9
    total = COUNTS.papers_with_field
    assert shares.loc["medicine", "share"] == pytest.approx(100 / total)
    # union of the groups minus their overlap plus other covers every paper with a field
    assert shares.loc["medicine", "papers"] + shares.loc["mathematics", "papers"] - 8 + 9 == total


def test_analysis_table_order_and_dict():
    a = analyse(FIX / "records.jsonl", threads=1)
    assert a.order("group")[:1] == ["Medicine"]
    assert sorted(a.order("count")) == sorted(fos.FIELDS)
    assert a.order("canonical") == list(fos.FIELDS)
    table = a.table.set_index("field")
    assert table.loc["Medicine", "n_i"] == 4 and table.loc["Medicine", "group"] == "medicine"
    assert table["share_of_labels"].sum() == pytest.approx(1.0)
    d = a.to_dict()
    assert len(d["fields"]) == 19 and d["c"]["Medicine"]["Biology"] == pytest.approx(0.5)
    assert a.closest("Medicine", 1) == [("Biology", 0.5)]
