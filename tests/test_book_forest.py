"""The claims page's first screen (medibio.book.forest): the forest plot, the compact table, the headline; read
from verdict rows with or without the attributes a newer row carries (the paper's effect in our statistic, a
design label, the verdict in words)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import matplotlib
import pytest

from medibio.book import forest

matplotlib.use("Agg")


def _row(id_: str, diff: float, low: float, high: float, verdict: str, paper: float | None = None,
         delta: float = 1.0, **extra) -> SimpleNamespace:
    return SimpleNamespace(id=id_, claim=f"claim {id_}", where="§V", a="A", b="B", side=1, delta=delta,
                           verdict=verdict, verdict_text=verdict, link=f"chapter.html#{id_}",
                           paper=SimpleNamespace(diff=paper, verdict="no spread printed"),
                           ours=SimpleNamespace(diff=diff, low=low, high=high, scale="MiniLM (22M); 5 seeds"), **extra)


@pytest.fixture
def rows() -> list[SimpleNamespace]:
    untested = _row("scierc-ner", math.nan, math.nan, math.nan, "not testable here", paper=2.0)
    return [_row("science-base", -1.17, -2.99, 0.66, "inconclusive", paper=0.4),
            _row("ift-biosses", -0.16, -1.5, 1.2, "no difference larger than δ", paper=35.0, delta=2.0),
            untested, _row("fulltext", 3.0, 1.0, 5.0, "supported", paper_effect=-0.8)]


def test_the_forest_plot_draws_every_tested_claim_with_zero_delta_and_the_papers_effect(rows) -> None:
    fig = forest.figure(rows)
    ax = fig.axes[0]
    labels = [t.get_text().split("\n") for t in ax.get_yticklabels()]
    # each line names its claim and, under it, the verdict in words
    assert labels == [["science-base", "inconclusive"], ["ift-biosses", "no difference larger than δ"],
                      ["fulltext", "supported"]]
    diamonds = [line for line in ax.lines if line.get_marker() == "D"]
    # the paper's effect in our statistic where the row has it (fulltext: -0.8), else the printed difference
    assert sorted(float(d.get_xdata()[0]) for d in diamonds) == [-0.8, 0.4]
    # one far outside our intervals (BIOSSES's +35) sits at the edge, pointing out, with its value
    low, high = ax.get_xlim()
    assert low < -2.99 and 5.0 < high < 10
    assert [float(line.get_xdata()[0]) for line in ax.lines if line.get_marker() == ">"] == [high]
    assert [t.get_text() for t in ax.texts] == ["paper +35.0"]
    assert any(line.get_xdata()[0] == 0 == line.get_xdata()[1] for line in ax.lines)  # the zero line
    assert len(ax.collections) == 3  # ±δ, one band per claim
    assert [t.get_color() for t in ax.get_yticklabels()] == [forest.COLOURS[v] for v in
                                                             ("inconclusive", "no difference larger than δ", "supported")]


def test_the_compact_table_has_four_columns_and_links_each_verdict_to_its_runs(rows) -> None:
    table = forest.compact(rows)
    assert list(table.columns) == ["claim", "paper", "ours A − B [95%]", "verdict"]
    assert table.loc["science-base", "ours A − B [95%]"] == "-1.17 [-2.99, +0.66]"
    assert table.loc["scierc-ner", "ours A − B [95%]"] == "not tested here"
    assert table.loc["fulltext", "paper"].startswith("-0.80")
    assert table.loc["fulltext", "verdict"].endswith(">supported — MiniLM (22M)</a>")  # the verdict and its scale
    assert 'href="chapter.html#ift-biosses"' in table.loc["ift-biosses", "verdict"]  # each row's own link
    assert 'href="chapter.html#science-base"' in table.loc["science-base", "verdict"]


def test_the_headline_counts_the_verdicts_of_the_tested_claims(rows) -> None:
    text = forest.headline(rows)
    assert text.startswith("This build's runs test 3 of the paper's 4 claims: 1 supported, ")
    assert "1 no difference larger than δ, 1 inconclusive" in text and "the other 1 cannot" in text


def test_nothing_tested_still_draws_a_figure() -> None:
    fig = forest.figure([_row("x", math.nan, math.nan, math.nan, "not testable here")])
    assert "no claim is tested" in fig.axes[0].texts[0].get_text()


def test_the_narrow_figure_labels_each_line_above_it_and_fits_a_phone(rows) -> None:
    fig = forest.figure(rows, narrow=True)
    ax = fig.axes[0]
    assert fig.get_figwidth() == forest.NARROW_INCHES
    assert ax.get_yticks().size == 0  # no label column beside the axes: the lines get the whole width
    labels = [t for t in ax.texts]
    assert [t.get_text().split(":")[0] for t in labels] == ["science-base", "ift-biosses", "fulltext"]
    # the paper's effect beyond the axis is said in its row's label, where it covers no line
    assert "paper +35.0, off the axis" in labels[1].get_text().replace("\n", " ")
    assert min(t.get_fontsize() for t in labels) >= forest.NARROW_TEXT_PT >= 9


def test_the_headline_counts_a_claim_the_design_could_not_test_under_its_label_not_its_measured_verdict(rows) -> None:
    """A scale mismatch measured as contradicted is counted as not testable, as its row reads; a proxy keeps its
    measured verdict under the proxy's name; the claims whose paper effect we exclude are counted."""
    rows = [*rows,
            _row("scratch", -20.1, -21.9, -18.3, "contradicted", verdict_label="not testable at this scale",
                 paper_effect_excluded=True),
            _row("hoc", -6.7, -10.0, -3.3, "contradicted", verdict_label="proxy contradicted")]
    text = forest.headline(rows)
    assert "contradicted, " not in text.replace("proxy contradicted", "")  # no bare "contradicted" count
    assert "1 proxy contradicted" in text and "1 run but not testable as designed (a scale mismatch)" in text
    # the paper's effect excluded on arms the design cannot compare is not counted
    assert "the paper's own effect lies outside" not in text
    rows[-1].paper_effect_excluded = True  # the proxy claim: tested, under its proxy's name
    assert "for 1 of the 4 the design could test, the paper's own effect lies outside our interval" in \
        forest.headline(rows)
    assert text.startswith("This build's runs test 5 of the paper's 6 claims: 1 supported, ")
    # the forest plot greys the line of the claim the design could not test
    fig = forest.figure(rows)
    colours = {t.get_text().split("\n")[0]: t.get_color() for t in fig.axes[0].get_yticklabels()}
    assert colours["scratch"] == forest.UNTESTABLE_COLOUR and colours["hoc"] == forest.COLOURS["contradicted"]


def test_the_compact_table_names_the_model_and_its_size_not_its_whole_pretraining(rows) -> None:
    long = _row("x", 1.0, 0.5, 1.5, "supported")
    long.ours.scale = ("#3: study-3-s1 (10.9M parameters), pretrained on 10.0M tokens here, 2 pretraining seeds; "
                       "fine-tuned on 500 examples")
    assert forest.scale(long) == "#3: study-3-s1 (10.9M parameters)"
    assert forest.scale(rows[0]) == "MiniLM (22M)"  # no parameters named: the first clause as it is


def test_a_caption_names_the_profiles_whose_runs_made_the_verdicts(rows) -> None:
    rows[0].ours.profile = "cpu-study"
    rows[1].ours.profile = "cpu-ift"
    rows[3].ours.profile = ""  # a sample of papers, no runs
    assert forest.made_by(rows, "cpu") == "recorded runs of profiles cpu-ift, cpu-study"
    rows[1].ours.profile = "cpu-study"
    assert forest.made_by(rows, "cpu") == "recorded runs of profile cpu-study"
    assert forest.made_by(rows, "cpu-study") == ""  # this build's own runs: its model names them
