"""The tables of Table 7's page and Appendices A and B as the page renders them (``notebook.for_the_page`` and
``notebook.style``, what ``chapter.table`` displays): counts as integers, scores at their printed precision,
readable headers on one header row, and no test score in the provenance table."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from medibio.book import appendix, numbers
from medibio.book import notebook as nb
from medibio.paper import audit, sources, tables


def _page(frame: pd.DataFrame, provenance: bool = False) -> str:
    return nb.style(nb.for_the_page(frame, provenance)).to_html()


def _header_rows(html: str) -> list[list[str]]:
    """The header rows of a rendered table, each as its cells' text."""
    head = re.search(r"<thead>(.*?)</thead>", html, re.S).group(1)
    return [[re.sub(r"<.*?>", "", cell).strip() for cell in re.findall(r"<th[^>]*>(.*?)</th>", row, re.S)]
            for row in re.findall(r"<tr>(.*?)</tr>", head, re.S)]


def _cells(html: str, row: str) -> list[str]:
    """The cells of the body row whose header is ``row``."""
    for tr in re.findall(r"<tr>(.*?)</tr>", re.search(r"<tbody>(.*?)</tbody>", html, re.S).group(1), re.S):
        cells = [re.sub(r"<.*?>", "", c).strip() for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", tr, re.S)]
        if cells and cells[0] == row:
            return cells[1:]
    raise AssertionError(f"no row {row!r}")


def _snake(headers: list[str]) -> list[str]:
    return [h for h in headers if re.fullmatch(r"[a-z0-9]+(_[a-z0-9]+)+", h)]


def test_table7_aggregates_show_counts_as_integers_and_scores_with_two_decimals() -> None:
    frame = tables.recomputed_aggregates(7)
    html = _page(frame)
    assert _header_rows(html) == [["model", *tables.AGGREGATE_COLUMNS]]
    assert _cells(html, "BioLinkBERT (base)") == ["82.55", "82.16", "13", "6"]
    assert _cells(html, "MediBioDeBERTa") == ["58.54", "59.39", "3", "2"]  # a mostly empty column of the paper
    assert "13.00" not in html and "3.00" not in html


def test_appendix_a_prints_training_steps_as_integers() -> None:
    checks = audit.run_audit()
    failed = audit.for_page(checks[~checks["consistent"]], ["reported", "recomputed", "explanation"], index="where")
    html = _page(failed)
    assert _cells(html, "Table 5, #1, Training Steps")[:2] == ["90,000", "10,000"]
    assert "90000.00" not in html
    assert _cells(html, "Table 6, col #5, BLURB Avg.")[:2] == ["76.38", "76.16"]  # scores keep their decimals
    every = audit.for_page(checks, ["category", "where", "reported", "recomputed", "difference", "consistent"])
    html = _page(every)
    assert _cells(html, "t5-steps-vs-t3")[2:5] == ["90,000", "10,000", "80,000"]
    assert _header_rows(html) == [["check", "family", "where", "reported", "recomputed", "reported − recomputed",
                                   "consistent"]]


def test_appendix_a_overview_has_one_header_row_of_integer_counts() -> None:
    checks = audit.run_audit()
    html = _page(audit.overview(checks))
    assert _header_rows(html) == [["family", "consistent", "inconsistent"]]
    bad = int((~checks["consistent"]).sum())
    shown = audit.overview(checks)
    assert int(shown["inconsistent"].sum()) == bad and int(shown.to_numpy().sum()) == len(checks)


def test_appendix_a_source_tables_have_readable_headers_on_one_row() -> None:
    quotes = _page(sources.comparison_for_page(sources.compare()))
    headers = _header_rows(quotes)
    assert headers == [["paper table", *sources.COMPARISON_HEADERS.values()]]
    assert not _snake(headers[0]) and "paper_value" not in quotes and "source_value" not in quotes
    assert _cells(quotes, "Table 1")[:5] == ["BERT", "BIOSSES", "83.21", "82.68", "0.53"]
    claims = _header_rows(_page(sources.claims_for_page(sources.recheck_claims())))
    assert claims == [["claim", *sources.CLAIM_HEADERS.values()]] and not _snake(claims[0])


@pytest.fixture
def data_root(tmp_path: Path) -> Path:
    (tmp_path / "blurb").mkdir()
    (tmp_path / "MANIFEST.md").write_text("# Data root\n", encoding="utf-8")
    (tmp_path / "blurb" / "a.tsv").write_text("abc\n", encoding="utf-8")
    digest = appendix._sha256_prefix(tmp_path / "blurb" / "a.tsv", 16)
    (tmp_path / "blurb" / "CHECKSUMS.tsv").write_text(f"path\tbytes\tsha256_16\tlines\na.tsv\t4\t{digest}\t1\n",
                                                      encoding="utf-8")
    return tmp_path


def test_appendix_b_data_tables_have_readable_headers_on_one_row(data_root: Path) -> None:
    html = _page(appendix.checksums_for_page(appendix.verify_checksums(data_root)))
    assert _header_rows(html) == [["file", "bytes", appendix.SHA_HEADER, "status"]]
    assert _cells(html, "blurb/a.tsv")[0::2] == ["4", "ok"]
    html = _page(appendix.manifests_for_page(appendix.manifests(data_root)))
    assert _header_rows(html) == [["manifest", "title", appendix.SHA_HEADER]] and "sha256_16" not in html


def _runs() -> pd.DataFrame:
    row = {"kind": "finetune", "profile": "cpu", "model": "minilm", "variant": "base", "dataset": "BIOSSES",
           "seed": 1, "status": "ok", "score_test": 87.02, "digest": "c4f54832706d", "commit": "16003464",
           "freshness": "current", "changed": "", "record": "finetune/cpu/minilm/base/BIOSSES/c4f548/seed1.json"}
    return pd.DataFrame([row], columns=list(appendix.INDEX_COLUMNS))


def test_appendix_b_run_records_are_provenance_without_the_score() -> None:
    html = _page(appendix.records_for_page(_runs()), provenance=True)
    headers = _header_rows(html)[0]
    assert headers[0] == "record" and {"digest", "commit", "freshness"} <= set(headers)
    assert "score_test" not in headers and "87.02" not in html and not _snake(headers)
    assert _cells(html, "finetune/cpu/minilm/base/BIOSSES/c4f548/seed1.json")[5] == "1"  # the seed


def test_appendix_b_first_table_counts_what_its_first_sentence_says(data_root: Path) -> None:
    drift = pd.DataFrame({"identical predictions": [True, True, False, None]})
    beside = pd.DataFrame({"same verdict": [True, False, True]}, index=pd.Index(["a", "b", "c"], name="id"))
    checksums = appendix.verify_checksums(data_root)
    checked = appendix.Reproducibility.of(_runs(), drift, beside, checksums)
    html = _page(checked.table())
    assert _header_rows(html) == [["checked", "count", "out of", "section"]]
    assert _cells(html, "run records this build read")[:2] == ["1", "–"]
    assert _cells(html, "recorded runs whose test predictions are byte-identical")[:2] == ["2", "3"]
    assert _cells(html, "claims whose verdict differs from reference/'s")[:2] == ["1", "3"]
    assert _cells(html, "data files that differ from their checksums")[:2] == ["0", "1"]
    reading = numbers.reproducibility_reading(checked.records, checked.compared, checked.identical, checked.changed,
                                              checked.checksums)["b_reading"][0]
    assert "read 1 run records; 2 of the 3 runs" in reading and "1 of the claims' verdicts" in reading
    assert "0 of the 1 data files" in reading


def test_appendix_b_says_what_its_stale_records_are_and_that_their_numbers_stand() -> None:
    runs = pd.DataFrame({"kind": ["pretrain", "pretrain", "finetune"], "profile": ["study", "study", "cpu"],
                         "freshness": ["stale", "stale", "current"],
                         "changed": ['precision: "no" → "bf16"; vocabulary.spm.model: "33" → "(absent)"',
                                     'vocabulary.spm.model: "33" → "(absent)"', None]})
    text = appendix.freshness_reading(runs)
    assert text.startswith("2 of 3 records are stale here: 2 pretrain records of profile study (precision, "
                           "vocabulary changed).")
    assert "keeps the numbers its run made" in text and "the precision this machine computes in" in text
    assert appendix.freshness_reading(runs[runs["freshness"] == "current"]).startswith("All 1 records are current")
