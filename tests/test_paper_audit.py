"""The paper audit: recomputed averages, cross-table checks, claims, and the ``medibio audit`` command."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from medibio.paper import audit, claims


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return audit.run_audit().set_index("id")


def test_columns_and_types(frame: pd.DataFrame) -> None:
    assert list(frame.reset_index().columns) == list(audit.COLUMNS)
    assert frame["consistent"].dtype == bool
    assert frame.index.is_unique


def test_table6_col1_paper_average_and_blurb_score(frame: pd.DataFrame) -> None:
    row = frame.loc["t6-avg-#1"]
    assert row["where"] == "Table 6, col #1, BLURB Avg."
    assert row["recomputed"] == pytest.approx(78.0308, abs=1e-4)
    assert bool(row["consistent"])
    assert row["alternative"] == pytest.approx(72.3234, abs=1e-4)  # macro over the six groups
    assert abs(row["alternative"] - 78.03) > 5


def test_table6_col5_average_is_flagged(frame: pd.DataFrame) -> None:
    row = frame.loc["t6-avg-#5"]
    assert not row["consistent"]
    assert row["recomputed"] == pytest.approx(76.1577, abs=1e-4)


def test_chemprot_copy_error_is_flagged(frame: pd.DataFrame) -> None:
    row = frame.loc["t7-vs-t6-MediBioDeBERTa-IFT-ChemProt"]
    assert (row["reported"], row["recomputed"]) == (93.04, 77.80)
    assert not row["consistent"]
    assert "BC5-chem" in row["explanation"] and "copy error" in row["explanation"]
    # the RE average was computed with 77.80: recomputing from the printed cells disagrees
    re_avg = frame.loc["t7-avg-MediBioDeBERTa-IFT-RE Avg."]
    assert not re_avg["consistent"] and "80.17" in re_avg["explanation"]
    assert not frame.loc["vd-chemprot-f1"]["consistent"]


def test_biolinkbert_re_average_traced_to_one_re_cell() -> None:
    fixes = audit.single_cell_fixes(7, "BioLinkBERT (base)")
    assert set(fixes) == {"ChemProt", "DDI", "GAD"}
    low, high = fixes["ChemProt"]
    assert low <= 0.70 <= high
    assert audit.single_cell_fixes(7, "SciDeBERTa v2 (full-FS)") == {}


def test_batch_product_and_warmup(frame: pd.DataFrame) -> None:
    row = frame.loc["va-batch-product"]
    assert row["recomputed"] == 49_152 and bool(row["consistent"])
    assert frame.loc["va-warmup-share"]["recomputed"] == pytest.approx(10.0)
    assert frame.loc["t3-warmup-share-scideberta"]["recomputed"] == pytest.approx(10.0)
    assert not frame.loc["t5-steps-vs-t3"]["consistent"]


def test_gains_are_read_as_points(frame: pd.DataFrame) -> None:
    biosses = frame.loc["vd-ift-biosses"]
    assert bool(biosses["consistent"]) and biosses["reading"] == "difference in points"
    assert biosses["alternative"] == pytest.approx((92.7 - 57.68) / 57.68 * 100)
    assert not frame.loc["vd-ift-pubmedqa"]["consistent"]
    assert frame.loc["vd-ift-pubmedqa"]["recomputed"] == pytest.approx(2.49)
    assert not frame.loc["intro-ner-gain"]["consistent"]
    assert bool(frame.loc["vd-chemprot-gain"]["consistent"])  # 14.94 matches the printed cells...
    assert not frame.loc["intro-chemprot-gain"]["consistent"]  # ...14.96 does not
    assert frame.loc["vd-chemprot-gain-alt"]["recomputed"] == pytest.approx(-0.30)


def test_text_average_and_leaderboard(frame: pd.DataFrame) -> None:
    assert not frame.loc["vd-qna-avg"]["consistent"]
    assert bool(frame.loc["vi-average"]["consistent"])
    board = frame.loc["vi-leaderboard"]
    assert not board["consistent"]
    assert board["recomputed"] == pytest.approx(80.10, abs=0.01)
    assert board["alternative"] == pytest.approx(81.72, abs=0.005)


def test_macro_reading_changes_best_config(frame: pd.DataFrame) -> None:
    assert bool(frame.loc["vc-best-config"]["consistent"])
    assert not frame.loc["vc-best-config-alt"]["consistent"]


def test_biosses_metric_label(frame: pd.DataFrame) -> None:
    assert not frame.loc["t7-metric-SS"]["consistent"]
    assert bool(frame.loc["t7-metric-QA"]["consistent"])


def test_every_checkable_claim_is_audited(frame: pd.DataFrame) -> None:
    for claim in claims.STATEMENTS:
        assert (claim.id in frame.index) == claim.checkable
        if not claim.checkable:
            assert claim.note
    with pytest.raises(KeyError):
        claims.resolve("T9|x|y")


def test_cli_audit_json_and_filter() -> None:
    from medibio.cli.main import app

    runner = CliRunner()
    result = runner.invoke(app, ["audit", "--json", "--only-inconsistent"])
    assert result.exit_code == 0, result.output
    records = json.loads(result.output)
    assert records and all(not r["consistent"] for r in records)
    assert any(r["id"] == "t7-vs-t6-MediBioDeBERTa-IFT-ChemProt" for r in records)
    text = runner.invoke(app, ["audit"])
    assert text.exit_code == 0
    assert audit.summary(audit.run_audit()) in text.output


def test_cli_paper_table_json() -> None:
    from medibio.cli.main import app

    result = CliRunner().invoke(app, ["paper-table", "6", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert len(rows) == 14 and rows[-1]["label"] == "BLURB Avg."
