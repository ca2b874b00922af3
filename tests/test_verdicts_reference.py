"""The verdict rules on the recorded runs of ``reference/`` (real data root): ``fulltext`` judged as a
non-superiority claim, ``ift-pubmedqa`` labelled a floor from the data, ``science-base`` saying whether the
paper's own +0.85 (Table 6, the seven large sets) is excluded, and every row's interval, p and verdict in
agreement."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from medibio.baselines.constant import majority_score
from medibio.book import verdicts as V
from medibio.core.settings import Settings
from medibio.results.recorded import REFERENCE_ROOT

CLAIMS = ("science-base", "fulltext", "ift-pubmedqa", "ift-biosses")


@pytest.fixture(scope="module")
def found(data_root: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, V.Row]:
    settings = Settings(data_root=data_root, results_root=Path(REFERENCE_ROOT),
                        cache_root=tmp_path_factory.mktemp("cache"))
    return {r.id: r for r in V.rows(settings, "cpu", [V.get(c) for c in CLAIMS])}


def test_fulltext_is_judged_by_non_superiority(found: dict[str, V.Row]) -> None:
    row = found["fulltext"]
    assert row.ours.tested and row.side == -1
    assert row.verdict == V.verdict(row.ours.low, row.ours.high, -1, 1.0)
    # non-superiority reads the upper end against +δ: below it is support, above it is not
    assert (row.verdict == V.SUPPORTED) == (row.ours.high < 1.0)
    # the paper's own −0.32 (Table 6, #4 − #3 on the seven large sets) is tested on its side: the lower end
    assert row.paper_effect == pytest.approx(-0.3214, abs=1e-3) and row.paper_effect_end == row.ours.low
    assert row.paper_effect_excluded == (row.ours.low > row.paper_effect)


def test_ift_pubmedqa_is_a_floor_found_in_the_data(found: dict[str, V.Row], data_root: Path) -> None:
    row = found["ift-pubmedqa"]
    ours = row.ours
    assert ours.constant == pytest.approx(majority_score("PubMedQA", data_root))  # "yes" on every question
    assert ours.constant_low < ours.constant < ours.constant_high
    assert max(ours.a_score, ours.b_score) <= ours.constant_high
    assert row.design == V.FLOOR and row.verdict_words == f"not testable: floor (measured: {row.verdict_text})"
    assert row.proxy  # declared a proxy as well: the floor, found in the data, comes first


def test_science_base_says_whether_the_papers_effect_is_excluded(found: dict[str, V.Row]) -> None:
    row = found["science-base"]
    assert row.paper_effect == pytest.approx(0.8514, abs=1e-3)  # Table 6, #1 − #2 on the seven large sets
    assert row.paper.quoted_diff == pytest.approx(78.03 - 76.65)  # Table 5's 13-set averages, beside it
    assert row.paper_effect_end == row.ours.high
    assert row.paper_effect_excluded == (row.ours.high < row.paper_effect) == (row.paper_effect_p < V.ALPHA)
    if row.paper_effect_excluded:
        assert row.paper_effect_words == (f"the paper's +0.85 is excluded at this scale (upper end "
                                          f"{row.ours.high:+.2f})")
    # beside the declared statistic: the seven sets alone and Welch's t over the 2 + 2 pretrained models
    alone = [b for b in row.ours.beside if " alone " in b.label]
    assert [b.runs for b in alone] == list(V.T5_SETS)
    assert row.ours.diff == pytest.approx(np.mean([b.diff for b in alone]))
    (welch,) = [b for b in row.ours.beside if b.label.startswith("Welch's t over the pretrained models (2 + 2")]
    assert welch.high - welch.low > row.ours.high - row.ours.low  # two models per arm: the wider interval


def test_every_interval_agrees_with_its_p(found: dict[str, V.Row]) -> None:
    for row in found.values():
        ours = row.ours
        assert (ours.low > 0 or ours.high < 0) == (ours.p < V.ALPHA), row.id
        for b in ours.beside:
            assert (b.low > 0 or b.high < 0) == (b.p < V.ALPHA), (row.id, b.label)
    # MiniLM's recorded runs stand beside ift-biosses as the ceiling case, whatever the declared #3 models show
    (ceiling,) = [b for b in found["ift-biosses"].ours.beside if b.label.startswith("minilm: the ceiling case")]
    assert ceiling.runs.startswith("cpu-ift/minilm: ift-STS-B (5 seeds) vs base (5 seeds) on BIOSSES")
