"""The paper's baseline numbers against their publications, and its comparisons redone with them."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from medibio.core.errors import InputFormatError
from medibio.paper import sources


@pytest.fixture(scope="module")
def quotes() -> pd.DataFrame:
    return sources.compare().set_index("id")


@pytest.fixture(scope="module")
def redone() -> pd.DataFrame:
    return sources.recheck_claims().set_index("id")


@pytest.fixture(scope="module")
def groups() -> pd.DataFrame:
    return sources.group_comparison().set_index("quantity")


# --------------------------------------------------------------------------- published figures

def test_published_rows_carry_a_citation_and_no_invented_numbers() -> None:
    table = sources.published_table()
    assert set(table["status"]) == set(sources.SOURCE_STATUSES)
    assert table["publication"].str.len().gt(0).all() and table["url"].str.startswith("https://").all()
    assert table.loc[table["status"] != sources.TRANSCRIBED, "value"].isna().all()
    assert table.loc[table["status"] == sources.TRANSCRIBED, "value"].notna().all()
    pinned = table[table["url"].str.contains("github.com")]
    assert pinned["url"].str.contains(r"/blob/[0-9a-f]{40}/").all()  # READMEs pinned to a commit


def test_transcribed_row_wins_over_an_unreadable_one() -> None:
    # the LinkBERT paper's table is unreadable here; its README gives PubMedQA with one decimal
    hit = sources.published("BioLinkBERT-base", "PubMedQA")
    assert (hit.value, hit.decimals, hit.status) == (70.2, 1, sources.TRANSCRIBED)
    assert "README" in hit.locator
    assert sources.published("BioLinkBERT-base", "BC5-chem").status == sources.UNAVAILABLE


def test_published_aggregates_by_hand() -> None:
    qa = sources.published("BioLinkBERT-base", "GROUP:QA")
    assert qa.value == pytest.approx((70.2 + 91.4) / 2) and qa.decimals == 1
    ner = sources.published("PubMedBERT uncased", "GROUP:NER")  # Gu et al., Table 6
    assert ner.value == pytest.approx((93.33 + 85.62 + 87.82 + 84.52 + 80.06) / 5)
    plain = sources.published("PubMedBERT uncased", "PLAIN")
    cells = (93.33, 85.62, 87.82, 84.52, 80.06, 73.38, 77.24, 82.36, 82.34, 92.30, 82.32, 55.84, 87.56)
    assert plain.value == pytest.approx(sum(cells) / 13)
    gap = sources.published("BioLinkBERT-base", "GROUP:NER")
    assert gap.value is None and gap.status == sources.UNAVAILABLE and "BC5-chem" in gap.note


def test_bad_rows_name_file_and_line(tmp_path) -> None:
    bad = tmp_path / "p.csv"
    header = "model,dataset,stat,value,status,publication,locator,url,note\n"
    bad.write_text(header + "M,BIOSSES,mean,1.5,guessed,P,L,https://x,\n", encoding="utf-8")
    with pytest.raises(InputFormatError, match=r"p\.csv:2: expected status"):
        sources.published("M", "BIOSSES", path=bad)
    bad.write_text(header + "M,BIOSSES,mean,,transcribed,P,L,https://x,\n", encoding="utf-8")
    with pytest.raises(InputFormatError, match=r"p\.csv:2: expected a value exactly when"):
        sources.published("M", "BIOSSES", path=bad)
    with pytest.raises(KeyError):
        sources.published("GPT-4", "BIOSSES")


# --------------------------------------------------------------------------- quoted numbers

def test_scideberta_numbers_equal_their_source(quotes: pd.DataFrame) -> None:
    for row_id in ("t4-SciDeBERTa [12]-SciERC NER", "t4-SciDeBERTa [12]-SciERC Coref std"):
        row = quotes.loc[row_id]
        assert row["status"] == sources.EQUAL and row["difference"] == pytest.approx(0.0)
        assert row["source_model"] == "SciDeBERTa (CS)" and "Table 5" in row["locator"]
    assert "abstracts" in quotes.loc["t4-SciDeBERTa [12]-SciERC NER", "note"]


def test_differing_numbers_and_their_differences(quotes: pd.DataFrame) -> None:
    bert = quotes.loc["t1-BERT-BIOSSES"]  # 83.21 printed, BLURB Table 6 gives BERT uncased 82.68
    assert bert["status"] == sources.DIFFERS and bert["difference"] == pytest.approx(83.21 - 82.68)
    pubmedqa = quotes.loc["t7-BioLinkBERT (base)-PubMedQA"]
    assert pubmedqa["difference"] == pytest.approx(58.32 - 70.2)
    bioasq = quotes.loc["t7-BioLinkBERT (base)-BioASQ"]  # 91.57 does not round to the README's 91.4
    assert bioasq["status"] == sources.DIFFERS and bioasq["tolerance"] == pytest.approx(0.05)
    qna = quotes.loc["t7-BioLinkBERT (base)-QnA Avg."]
    assert qna["difference"] == pytest.approx(74.95 - 80.8)
    macro = quotes.loc["t7-BioLinkBERT (base)-BLURB score of the printed cells"]
    by_hand = (86.024 + 74.2 + (78.1 + 81.12 + 82.51) / 3 + 92.5 + 84.73 + (58.32 + 91.57) / 2) / 6
    assert macro["paper_value"] == pytest.approx(by_hand) and macro["source_value"] == 83.39


def test_unreachable_and_unreported_sources_are_said_so(quotes: pd.DataFrame) -> None:
    assert quotes.loc["t7-BioLinkBERT (base)-BC5-chem", "status"] == sources.UNAVAILABLE
    assert pd.isna(quotes.loc["t7-BioLinkBERT (base)-BC5-chem", "source_value"])
    for model in ("LinkBERT", "DeBERTa", "DeBERTa-MNLI"):
        assert quotes.loc[f"t1-{model}-BIOSSES", "status"] == sources.NOT_REPORTED
    summary = sources.comparison_summary(sources.compare())
    assert summary.startswith(f"{len(sources.QUOTES)} quoted numbers") and "5 differs" in summary


def test_equal_within_the_coarser_printed_precision() -> None:
    quote = sources.Quote(7, "x", "BioASQ", "91.43", "PUB|BioLinkBERT-base|BioASQ")
    row = sources.compare((quote,)).iloc[0]
    assert row["status"] == sources.EQUAL and row["tolerance"] == pytest.approx(0.05)


# --------------------------------------------------------------------------- groups and claims

def test_group_comparison_both_aggregates_by_hand(groups: pd.DataFrame) -> None:
    ift = {"NER": (93.04 + 85.13 + 89.08 + 83.94 + 80.23) / 5, "PICO": 73.73,
           "RE": (77.80 + 80.47 + 82.23) / 3, "SS": 92.7, "DC": 71.49, "QA": (59.33 + 93.14) / 2}
    assert groups.loc["BLURB score (macro over groups)", "ift"] == pytest.approx(sum(ift.values()) / 6)
    plain = (93.04 + 85.13 + 89.08 + 83.94 + 80.23 + 73.73 + 77.80 + 80.47 + 82.23 + 92.7 + 71.49 + 59.33
             + 93.14) / 13
    assert groups.loc["BLURB Avg. (plain mean of 13)", "ift"] == pytest.approx(plain)
    assert groups.loc["BLURB Avg. (plain mean of 13)", "best_published_model"] == "PubMedBERT uncased"
    assert groups.loc["BLURB Avg. (plain mean of 13)", "ift_leads"] == "no"  # PubMedBERT's mean is 81.90
    assert groups.loc["QA", "ift_minus_published"] == pytest.approx(ift["QA"] - 80.8)
    assert groups.loc["NER", "ift_leads"] == "open"  # ahead of PubMedBERT, BioLinkBERT unreadable


def test_claim_verdicts(redone: pd.DataFrame) -> None:
    qna = redone.loc["sota-qna"]
    assert (qna["printed_verdict"], qna["verdict"], bool(qna["changed"])) == ("holds", "fails", True)
    assert qna["source_margin"] == pytest.approx(76.24 - 80.8)
    ner = redone.loc["sota-ner"]
    assert ner["verdict"] == sources.PARTIAL and ner["source_margin"] == pytest.approx(86.28 - 86.27)
    assert "BioLinkBERT-base" in ner["unreachable"]
    assert redone.loc["biolinkbert-pico", "verdict"] == sources.UNCHECKABLE
    overall = redone.loc["biolinkbert-overall-macro"]
    assert overall["verdict"] == "holds" and overall["source_margin"] == pytest.approx(83.39 - 80.100944)
    assert redone.loc["t4-coref", "verdict"] == "fails"
    assert redone.loc["t4-coref-abstract-variant", "verdict"] == "holds"
    assert redone.loc["pubmedbert-vs-biobert", "source_margin"] == pytest.approx(81.10 - 80.29)


def test_rank_claim_gives_a_lower_bound(redone: pd.DataFrame) -> None:
    rank = redone.loc["leaderboard-rank"]
    # above the IFT model's BLURB score (80.10): BioLinkBERT large/base, PubMedBERT, BioBERT
    assert rank["source_margin"] == 5 and rank["verdict"] == sources.UNCHECKABLE
    rivals = next(c for c in sources.CLAIMS if c.id == "leaderboard-rank").with_sources
    claim = sources.SourceClaim("r", "", "", "rank", (), rivals, reported=3)
    assert sources.recheck_claims((claim,)).iloc[0]["verdict"] == "fails"


def test_cli_sources_json() -> None:
    from medibio.cli.main import app

    result = CliRunner().invoke(app, ["audit", "--sources", "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert set(out) == {"quotes", "groups", "claims"}
    assert len(out["quotes"]) == len(sources.QUOTES) and len(out["claims"]) == len(sources.CLAIMS)
    text = CliRunner().invoke(app, ["audit", "--sources"])
    assert text.exit_code == 0 and "claims redone with published figures" in text.output
