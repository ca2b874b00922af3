"""The verdict rules on the recorded runs of ``reference/`` (real data root): ``fulltext`` judged as a
non-superiority claim, ``ift-pubmedqa`` labelled a floor from the data, ``science-base`` saying whether the
paper's own +0.85 (Table 6, the seven large sets) is excluded, and every row's interval, p and verdict in
agreement."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from medibio.baselines.constant import majority_score
from medibio.book import claims, rules, verdicts
from medibio.core.settings import Settings
from medibio.results.recorded import REFERENCE_ROOT

CLAIMS = ("science-base", "fulltext", "ift-pubmedqa", "ift-biosses")


@pytest.fixture(scope="module")
def found(data_root: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, verdicts.Row]:
    settings = Settings(data_root=data_root, results_root=Path(REFERENCE_ROOT),
                        cache_root=tmp_path_factory.mktemp("cache"))
    return {r.id: r for r in verdicts.rows(settings, "cpu", [claims.get(c) for c in CLAIMS])}


def test_fulltext_is_judged_by_non_superiority(found: dict[str, verdicts.Row]) -> None:
    row = found["fulltext"]
    assert row.ours.tested and row.side == -1
    assert row.verdict == rules.verdict(row.ours.low, row.ours.high, -1, 1.0)
    # non-superiority reads the upper end against +δ: below it is support, above it is not
    assert (row.verdict == rules.SUPPORTED) == (row.ours.high < 1.0)
    # the paper's own −0.32 (Table 6, #4 − #3 on the seven large sets) is tested on its side: the lower end
    assert row.paper_effect == pytest.approx(-0.3214, abs=1e-3) and row.paper_effect_end == row.ours.low
    assert row.paper_effect_excluded == (row.ours.low > row.paper_effect)


def test_ift_pubmedqa_is_a_floor_found_in_the_data(found: dict[str, verdicts.Row], data_root: Path) -> None:
    row = found["ift-pubmedqa"]
    ours = row.ours
    assert ours.constant == pytest.approx(majority_score("PubMedQA", data_root))  # "yes" on every question
    assert ours.constant_low < ours.constant < ours.constant_high
    assert max(ours.a_score, ours.b_score) <= ours.constant_high
    assert row.design == rules.FLOOR and row.verdict_words == f"not testable: floor (measured: {row.verdict_text})"
    assert row.proxy  # declared a proxy as well: the floor, found in the data, comes first


def test_science_base_says_whether_the_papers_effect_is_excluded(found: dict[str, verdicts.Row]) -> None:
    row = found["science-base"]
    assert row.paper_effect == pytest.approx(0.8514, abs=1e-3)  # Table 6, #1 − #2 on the seven large sets
    assert row.paper.quoted_diff == pytest.approx(78.03 - 76.65)  # Table 5's 13-set averages, beside it
    assert row.paper_effect_end == row.ours.high
    assert row.paper_effect_excluded == (row.ours.high < row.paper_effect) == (row.paper_effect_p < rules.ALPHA)
    if row.paper_effect_excluded:
        # the arms differ in precision here: the number stands, said to be on arms the design cannot compare
        caveat = ", on arms the design cannot compare" if row.design in rules.UNTESTABLE else ""
        assert row.paper_effect_words == (f"the paper's +0.85 is excluded at this scale (upper end "
                                          f"{row.ours.high:+.2f}{caveat})")
    # beside the declared statistic: the seven sets alone and Welch's t over the 2 + 2 pretrained models
    alone = [b for b in row.ours.beside if " alone " in b.label]
    assert [b.runs for b in alone] == list(claims.T5_SETS)
    assert row.ours.diff == pytest.approx(np.mean([b.diff for b in alone]))
    (welch,) = [b for b in row.ours.beside if b.label.startswith("Welch's t over the pretrained models (2 + 2")]
    assert welch.high - welch.low > row.ours.high - row.ours.low  # two models per arm: the wider interval


def test_every_interval_agrees_with_its_p(found: dict[str, verdicts.Row]) -> None:
    for row in found.values():
        ours = row.ours
        assert (ours.low > 0 or ours.high < 0) == (ours.p < rules.ALPHA), row.id
        for b in ours.beside:
            assert (b.low > 0 or b.high < 0) == (b.p < rules.ALPHA), (row.id, b.label)
    # ift-biosses is tested on the study's two #3 models (both arms, 5 seeds each), with MiniLM's recorded runs
    # beside it as the ceiling case and the cross-validation over all 100 pairs
    biosses = found["ift-biosses"]
    assert biosses.ours.runs.startswith("cpu-ift/study-3-s1+study-3-s2: ift-STS-B (10 runs: 2 pretrained models")
    assert "pretraining seeds" in biosses.ours.resampled and "fp32" in biosses.ours.scale
    assert biosses.design == "" and biosses.paper_effect == pytest.approx(35.02, abs=0.01)
    (ceiling,) = [b for b in biosses.ours.beside if b.label.startswith("minilm: the ceiling case")]
    assert ceiling.runs.startswith("cpu-ift/minilm: ift-STS-B (5 seeds) vs base (5 seeds) on BIOSSES")
    (cv,) = [b for b in biosses.ours.beside if b.label.startswith("5-fold cross-validation over all 100")]
    assert "10 seeds of 2 pretrained models" in cv.runs
