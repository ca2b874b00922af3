"""The sentences that open the chapters (medibio.book.numbers): read from the chapter's key table, never typed."""

from __future__ import annotations

import pandas as pd

from medibio.book import numbers


def test_the_study_reading_ranks_our_arms_and_the_papers_on_the_large_sets() -> None:
    table = pd.DataFrame({numbers.LARGE_MEAN: [12.84, 45.32, 84.24, 46.49, 83.39], "runs": [42, 42, None, 42, None]},
                         index=["ours #0", "ours #1", "paper #1", "ours #2", "paper #2"])
    text = numbers.study_reading(table)["study_reading"][0]
    assert "rank #2 46.49, #1 45.32, #0 12.84" in text and "the paper's same configurations rank #1 84.24, #2 83.39" in text
    assert numbers.study_reading(pd.DataFrame())["study_reading"][0] is None


def test_the_table7_reading_compares_on_the_same_sets() -> None:
    compared = pd.DataFrame({"ours (direct)": [80.0, 60.0, None], "BioLinkBERT (base)": [90.0, 70.0, 10.0],
                             "MediBioDeBERTa-IFT": [91.0, None, 12.0]}, index=["GAD", "HoC", "DDI"])
    text = numbers.table7_reading(compared, "ours (direct)", ["BioLinkBERT (base)", "MediBioDeBERTa-IFT"])["t7_reading"][0]
    # DDI has no score of ours and leaves every mean; the IFT column lacks HoC and is not averaged over a subset
    assert text == ("Fine-tuned directly on 2 BLURB sets, our model averages 70.00 on them, against "
                    "BioLinkBERT (base) 80.00 on the same sets in the paper's Table 7.")
