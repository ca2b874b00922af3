"""Aggregation maths on hand-made records; every expected number is worked out in the comments."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from medibio.results import aggregate as A
from medibio.runs import records as R

MODEL = {"name": "minilm", "path": "/m", "tag": "minilm", "hash": "sha256:0", "model_type": "bert",
         "parameters": 1}

# One seed each unless listed: NER 90, 80, 85, 82, 78 -> NER average 415/5 = 83.0
# RE 70, 75, 80 -> 75.0;  SS BIOSSES seeds 80, 82, 84;  DC HoC 80;  QA PubMedQA seeds 50, 60, BioASQ 70
SCORES = {
    "BC5-chem": [90.0], "BC5-disease": [80.0], "NCBI-disease": [85.0], "BC2GM": [82.0], "JNLPBA": [78.0],
    "ChemProt": [70.0], "DDI": [75.0], "GAD": [80.0], "BIOSSES": [80.0, 82.0, 84.0], "HoC": [80.0],
    "PubMedQA": [50.0, 60.0], "BioASQ": [70.0],
}


def _records(profile: str = "cpu") -> list[R.RunRecord]:
    out = [R.RunRecord(dataset=d, model=MODEL, profile=profile, seed=i + 1, score_test=v, score_dev=v + 1,
                       config_digest="c0ffee000000") for d, values in SCORES.items() for i, v in enumerate(values)]
    out.append(R.RunRecord(dataset="EBM-PICO", model=MODEL, profile=profile, seed=1, status="skipped",
                           reason="train split absent in the data root", config_digest="c0ffee000000"))
    return out


def _row(df, name):
    hit = df[df["row"] == name]
    assert len(hit) == 1, name
    return hit.iloc[0]


def test_seed_stats_by_hand():
    # BIOSSES 80, 82, 84: mean 82; deviations -2, 0, 2 -> var (4+0+4)/2 = 4 -> std 2
    # 95% CI half-width = t(0.975, df=2) * 2 / sqrt(3) = 4.302653 * 1.154701 = 4.968275
    n, mean, std, half = A.seed_stats([80.0, 82.0, 84.0])
    assert (n, mean, std) == (3, 82.0, 2.0)
    assert half == pytest.approx(4.968275, abs=1e-5)
    # PubMedQA 50, 60: mean 55; var (25+25)/1 = 50 -> std 7.071068; t(0.975, 1) = 12.706205
    # half-width = 12.706205 * 7.071068 / sqrt(2) = 63.531024
    n, mean, std, half = A.seed_stats([50.0, 60.0])
    assert mean == 55.0 and std == pytest.approx(7.071068, abs=1e-6) and half == pytest.approx(63.531024, abs=1e-5)
    # one seed: spread unknown
    n, mean, std, half = A.seed_stats([70.0])
    assert (n, mean) == (1, 70.0) and math.isnan(std) and math.isnan(half)


def test_dataset_rows():
    df = A.results_table(_records())
    assert list(df.columns) == list(A.COLUMNS)
    bio = _row(df, "BIOSSES")
    assert bio["n"] == 3 and bio["mean"] == 82.0 and bio["std"] == 2.0 and bio["seeds"] == [1, 2, 3]
    assert bio["group"] == "SS" and bio["metric"] == "pearson" and bio["level"] == "dataset"
    assert math.isnan(_row(df, "BioASQ")["std"])
    pico = _row(df, "EBM-PICO")
    assert pico["n"] == 0 and math.isnan(pico["mean"]) and "train split absent" in pico["note"]
    # datasets in BLURB order, then groups, then the two aggregates
    assert list(df["row"])[:6] == ["BC5-chem", "BC5-disease", "NCBI-disease", "BC2GM", "JNLPBA", "EBM-PICO"]
    assert list(df["row"])[-2:] == [A.BLURB_SCORE, A.PAPER_AVG]


def test_group_and_blurb_aggregates_by_hand():
    df = A.results_table(_records())
    assert _row(df, "NER")["mean"] == pytest.approx(83.0)  # 415 / 5
    assert _row(df, "RE")["mean"] == pytest.approx(75.0)  # (70+75+80)/3
    assert _row(df, "QA")["mean"] == pytest.approx(62.5)  # (55 + 70) / 2
    assert "PICO" not in set(df["row"])  # no scored dataset in PICO: no group row
    # BLURB score over 5 groups: (83 + 75 + 82 + 80 + 62.5) / 5 = 382.5 / 5 = 76.5
    blurb = _row(df, A.BLURB_SCORE)
    assert blurb["mean"] == pytest.approx(76.5) and blurb["covers"] == "5/6 groups; missing PICO"
    # paper average over 12 datasets: (415 + 225 + 82 + 80 + 55 + 70) / 12 = 927 / 12 = 77.25
    avg = _row(df, A.PAPER_AVG)
    assert avg["mean"] == pytest.approx(77.25) and avg["covers"] == "12/13 datasets; missing EBM-PICO"


def test_partial_group_is_flagged():
    recs = [r for r in _records() if r.dataset != "GAD"]
    df = A.results_table(recs)
    re_row = _row(df, "RE")
    assert re_row["mean"] == pytest.approx(72.5)  # (70 + 75) / 2
    assert re_row["covers"] == "2/3 datasets; missing GAD" and "not used" in re_row["note"]
    assert _row(df, A.BLURB_SCORE)["covers"] == "4/6 groups; missing PICO, RE"


def test_dev_split_and_filters():
    recs = _records() + _records(profile="smoke")
    df = A.results_table(recs, profile="cpu", split="dev")
    assert set(df["profile"]) == {"cpu"}
    assert _row(df, "BIOSSES")["mean"] == 83.0  # dev = test + 1
    only = A.results_table(recs, profile="smoke", dataset="biosses", aggregates=False)
    assert list(only["row"]) == ["BIOSSES"]


def test_table_from_results_root_and_cli(tmp_path: Path):
    from typer.testing import CliRunner

    from medibio.cli.main import app

    for rec in _records():
        R.write_record(rec, tmp_path)
    df = A.results_table(tmp_path)
    assert _row(df, A.BLURB_SCORE)["mean"] == pytest.approx(76.5)
    runner = CliRunner()
    res = runner.invoke(app, ["results", "table", "--results-root", str(tmp_path), "--format", "json"])
    assert res.exit_code == 0, res.output
    rows = {r["row"]: r for r in json.loads(res.output)}
    assert rows["BIOSSES"]["std"] == 2.0 and rows["BioASQ"]["std"] is None
    assert rows[A.BLURB_SCORE]["covers"] == "5/6 groups; missing PICO"
    res = runner.invoke(app, ["results", "table", "--results-root", str(tmp_path), "--format", "csv"])
    assert res.exit_code == 0 and res.output.splitlines()[0].startswith("profile,model,variant,row")
    assert "1 2 3" in res.output  # BIOSSES seeds
    res = runner.invoke(app, ["results", "table", "--results-root", str(tmp_path)])
    assert res.exit_code == 0 and "82.00 ± 2.00" in res.output and "missing PICO" in res.output
    res = runner.invoke(app, ["results", "table", "--results-root", str(tmp_path / "none")])
    assert res.exit_code != 0 and "no such folder" in str(res.exception)  # nothing there is no empty table


def test_compare_with_paper_accepts_aliases_and_tidy_frames():
    import pandas as pd

    df = A.results_table(_records())
    out = A.compare_with_paper(df, {"biosses": 90.0, "EBM PICO": 73.0, "BLURB score": 80.0})
    assert _row(out, "BIOSSES")["paper_diff"] == pytest.approx(-8.0)  # 82 - 90
    assert _row(out, A.BLURB_SCORE)["paper_diff"] == pytest.approx(-3.5)  # 76.5 - 80
    assert math.isnan(_row(out, "EBM-PICO")["paper_diff"])  # we have no score
    assert math.isnan(_row(out, "HoC")["paper"])  # paper does not report it here
    tidy = pd.DataFrame({"dataset": ["HoC", "GAD"], "value": [85.0, 82.0]})
    out = A.compare_with_paper(df, tidy, name="table6")
    assert _row(out, "HoC")["table6_diff"] == pytest.approx(-5.0)
    with pytest.raises(ValueError, match="several values"):
        A.compare_with_paper(df, pd.DataFrame({"dataset": ["HoC", "HoC"], "value": [1.0, 2.0]}))
