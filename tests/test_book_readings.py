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


def test_the_table4_reading_gives_the_papers_differences_and_our_f1() -> None:
    gains = pd.DataFrame({"v2 − v1": [1.3, -0.5], "p": [0.0049, 0.298]}, index=pd.Index(["NER", "Coref"], name="task"))
    text = numbers.table4_reading(gains, 5, {"NER": 40.12, "REL": float("nan")}, "minilm", 3)["t4_reading"][0]
    assert text.startswith("In the paper's Table 4 (5 runs per model), SciDeBERTa v2 − SciDeBERTa in F1 points is "
                           "NER +1.3 (Welch p = 0.005) and Coref -0.5 (p = 0.298); ")
    assert "(minilm, 3 seeds) reaches F1 NER 40.1, a check" in text  # a task without a score is left out
    assert numbers.table4_reading(gains, 5, {}, "minilm", 0)["t4_reading"][0].endswith("(p = 0.298).")


def test_the_fields_reading_names_the_closest_fields_and_whether_they_are_the_papers() -> None:
    group = ("Biology", "Chemistry", "Psychology")
    same = numbers.fields_reading([("Biology", 0.0876), ("Chemistry", 0.069), ("Psychology", 0.023), ("Art", 0.01)],
                                  1000, group)["fields_reading"][0]
    assert same == ("On this build's 1,000-paper S2ORC sample, the fields that medicine papers most often also carry "
                    "are biology (8.8 %), chemistry (6.9 %) and psychology (2.3 %): the three the paper keeps with "
                    "medicine.")
    other = numbers.fields_reading([("Biology", 0.1), ("Physics", 0.05), ("Psychology", 0.01)], 50, group)
    assert other["fields_reading"][0].endswith("physics (5.0 %) and psychology (1.0 %): the paper keeps biology, "
                                               "chemistry and psychology.")
    assert numbers.fields_reading([], 0, group)["fields_reading"][0] is None


def test_the_table3_reading_counts_the_cells_the_code_and_the_paper_share() -> None:
    from types import SimpleNamespace

    printed = pd.DataFrame({"a": ["10K", "AdamW"], "b": ["8,192", "linear"]})
    rendered = pd.DataFrame({"a": ["10K", "AdamW"], "b": ["8,192 (4,096 × 2)", "cosine"]})
    config = SimpleNamespace(max_steps=10_000, effective_batch=49_152, learning_rate=5e-4)
    text = numbers.table3_reading(rendered, printed, config, {"steps_done": 300, "final_loss": 6.5354}, "cpu")["t3_reading"][0]
    assert "equals the paper's in 3 of 4 cells" in text  # a batch layout in parentheses is not a difference
    assert text.endswith("this build's own run (configuration cpu) made 300 steps to a masked-LM loss of 6.54.")
    assert numbers.table3_reading(rendered, printed, config, None, "cpu")["t3_reading"][0].endswith("of 0.0005.")


def test_the_appendix_readings_count_what_they_check() -> None:
    assert numbers.audit_reading(60, 9)["audit_reading"][0].startswith("Of the paper's 60 numbers that can be "
                                                                       "recomputed from other numbers it prints, 9 do not")
    text = numbers.reproducibility_reading(1234, 40, 40, 0, (120, 0))["b_reading"][0]
    assert text == ("This build read 1,234 run records; 40 of the 40 runs whose test predictions reference/ also "
                    "records gave byte-identical ones, and 0 of the claims' verdicts differ from reference/'s; 0 of "
                    "the 120 data files differ from their checksums.")
    assert "reference/ records the test predictions of none of its runs" in numbers.reproducibility_reading(
        3, 0, 0, 0, None)["b_reading"][0]
    rendered = numbers.reproducibility_reading(648, 41, 41, 0, (53, 0), from_recorded=True)["b_reading"][0]
    assert "rendered from the runs recorded in reference/" in rendered and "not a re-execution" in rendered
    assert "41 of the 41" not in rendered and rendered.endswith("0 of the 53 data files differ from their checksums.")
