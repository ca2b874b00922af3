"""The paper's Tables 1-7 as transcribed: spot-checked cells, shapes, name mapping, bad-input errors."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from medibio.core.errors import InputFormatError
from medibio.paper import tables
from medibio.tasks import registry


@pytest.mark.parametrize(
    ("n", "column", "row", "expected"),
    [
        (1, "BERT", "BIOSSES", 83.21),
        (1, "DeBERTa-MNLI", "BIOSSES", 83.15),
        (3, "MediBioDeBERTa", "learning rate", 0.0005),
        (3, "SciDeBERTa v2", "max training steps", 500_000),
        (3, "MediBioDeBERTa", "batch size", 49_152),
        (4, "SciDeBERTa v2", "NER", 72.4),
        (4, "SciDeBERTa v2", "NER std", 0.4),
        (4, "SciDeBERTa", "Coref", 57.4),
        (5, "#1", "training_steps", 90_000),
        (5, "#5", "blurb_avg", 76.38),
        (6, "#3", "BIOSSES", 62.78),
        (6, "#1", "Chem Prot", 77.80),
        (6, "#4", "PubMedQA", 59.36),
        (6, "#2", "BLURB Avg.", 76.65),
        (7, "BioLinkBERT (base)", "HoC", 84.73),
        (7, "MediBioDeBERTa-IFT", "ChemProt", 93.04),
        (7, "SciDeBERTa v2 (full-FS)", "JNLPBA", 66.2),
        (7, "MediBioDeBERTa", "QnA Avg.", 74.99),
    ],
)
def test_spot_checked_cells(n: int, column: str, row: str, expected: float) -> None:
    assert tables.cell(n, column, row) == pytest.approx(expected)


def test_table6_is_13_datasets_by_5_configs_plus_average() -> None:
    frame = tables.load_table(6)
    scores = frame[frame["kind"] == "score"]
    assert sorted(set(scores["dataset"])) == sorted(registry.names())
    assert tables.columns(6) == ["#1", "#2", "#3", "#4", "#5"]
    assert len(scores) == 13 * 5 and scores["value"].notna().all()
    layout = tables.paper_layout(6)
    assert layout.shape == (14, 5)
    assert layout.loc[("", "BLURB Avg."), "#1"] == pytest.approx(78.03)


def test_table7_keeps_empty_cells_missing() -> None:
    layout = tables.paper_layout(7)
    assert list(layout.columns) == ["BioLinkBERT (base)", "SciDeBERTa v2 (full-FS)", "MediBioDeBERTa",
                                    "MediBioDeBERTa-IFT"]
    base = layout["MediBioDeBERTa"]
    assert base.notna().sum() == 5  # BIOSSES, HOC, PubmedQA, QnA Avg., BLURB Avg.
    assert math.isnan(tables.cell(7, "MediBioDeBERTa", "BC5-chem"))
    assert tables.column_scores(7, "MediBioDeBERTa") == {"BIOSSES": 57.68, "HoC": 61.09, "PubMedQA": 56.84}


def test_paper_spellings_map_to_registry_names() -> None:
    frame = tables.load_table(7)
    mapping = dict(zip(frame["label"], frame["dataset"], strict=True))
    assert mapping["Chem Prot"] == "ChemProt"
    assert mapping["HOC"] == "HoC"
    assert mapping["PubmedQA"] == "PubMedQA"
    assert mapping["EBM PICO"] == "EBM-PICO"
    assert pd.isna(mapping["NER Avg."])


def test_table2_counts_are_parsed() -> None:
    frame = tables.load_table(2)
    mesh = frame[frame["dataset"] == "mesh descriptors"].iloc[0]
    assert (mesh["train_used_n"], mesh["train_total_n"]) == (600_000, 2_069_000)
    author = frame[frame["dataset"] == "same author detection"].iloc[0]
    assert author["dev_used_n"] == 8_900 and pd.isna(author["format"])
    assert list(frame["task"].value_counts().sort_index().items()) == [("BIOSSES", 2), ("HoC", 4),
                                                                       ("PubMedQA", 4)]
    assert (frame["train_used_n"] <= frame["train_total_n"]).all()


def test_table3_and_4_layouts() -> None:
    assert tables.paper_layout(3).loc["warmup steps", "MediBioDeBERTa"] == "1K"
    assert tables.paper_layout(4).loc["SciDeBERTa v2", "JRE"] == "47.4 ± 1.2"
    assert tables.paper_layout(5).loc["#5", "base_model"] == "#4"


def test_parse_count() -> None:
    assert tables.parse_count("8.9K") == 8900
    assert tables.parse_count("8,192") == 8192
    assert math.isnan(tables.parse_count("AdamW"))
    assert tables.printed_decimals("78.1") == 1 and tables.printed_decimals("80.20") == 2


def test_bad_table_file_names_file_and_line(tmp_path) -> None:
    bad = tmp_path / "table6.csv"
    bad.write_text("model,group,label,metric,kind,value,note\n#1,NER,BC5-chem,,score,93.04,\n"
                   "#1,NER,BC5-disease,,score,eighty,\n", encoding="utf-8")
    with pytest.raises(InputFormatError) as err:
        tables.parse_table(bad, 6)
    assert err.value.line == 3 and "value" in err.value.expected
    header = tmp_path / "table5.csv"
    header.write_text("config,algo\n#1,x\n", encoding="utf-8")
    with pytest.raises(InputFormatError) as err:
        tables.parse_table(header, 5)
    assert err.value.line == 1


def test_unknown_addresses_raise() -> None:
    with pytest.raises(KeyError):
        tables.cell(6, "#9", "BIOSSES")
    with pytest.raises(KeyError):
        tables.load_table(8)
