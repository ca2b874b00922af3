"""The book's figures without seaborn (medibio.core.charts): the bars, lines and heatmap cells seaborn draws."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import same_color  # noqa: E402

from medibio.book import plots  # noqa: E402
from medibio.core import charts  # noqa: E402

sns = pytest.importorskip("seaborn")

FRAME = pd.DataFrame({"task": ["NER", "REL", "Coref", "NER", "REL", "Coref", "NER"],
                      "model": ["A", "A", "A", "B", "B", "B", "A"],
                      "score": [60.0, 40.0, 50.0, 62.0, 41.0, 49.0, 64.0]})


def _bars(ax) -> list[tuple[float, float, float, tuple]]:
    return sorted((round(p.get_x(), 9), round(p.get_width(), 9), round(p.get_height(), 9),
                   tuple(np.round(p.get_facecolor(), 6))) for bars in ax.containers for p in bars)


@pytest.mark.parametrize("dodge", [True, False])
def test_bars_are_seaborns(dodge: bool) -> None:
    fig, (theirs, ours) = plt.subplots(1, 2)
    sns.barplot(data=FRAME, x="task", y="score", hue="model", errorbar=None, dodge=dodge, ax=theirs)
    charts.bars(ours, FRAME, "task", "score", "model", dodge=dodge)
    assert _bars(ours) == _bars(theirs)  # the mean of NER/A's two values, in the categories' order
    assert [t.get_text() for t in ours.get_xticklabels()] == ["NER", "REL", "Coref"]
    assert ours.get_legend().get_title().get_text() == "model"
    plt.close(fig)


def test_lines_are_seaborns_with_a_seeded_band() -> None:
    curve = pd.DataFrame({"epoch": [2, 1, 3, 1, 2, 3] * 2, "F1": [5.0, 1.0, 6.0, 2.0, 4.0, 7.0] * 2,
                          "task": ["a"] * 6 + ["b"] * 6})
    fig, (theirs, ours) = plt.subplots(1, 2)
    sns.lineplot(data=curve, x="epoch", y="F1", hue="task", ax=theirs)
    charts.lines(ours, curve, "epoch", "F1", "task")
    for a, b in zip(theirs.get_lines()[:2], ours.get_lines()[:2], strict=True):
        assert np.array_equal(a.get_xydata(), b.get_xydata()) and same_color(a.get_color(), b.get_color())
    assert len(ours.collections) == 2  # a band per line: several values share each x
    again = plt.figure().add_subplot()
    charts.lines(again, curve, "epoch", "F1", "task")
    assert np.array_equal(again.collections[0].get_paths()[0].vertices, ours.collections[0].get_paths()[0].vertices)
    plt.close("all")


def test_heatmap_cells_labels_and_their_colours_are_seaborns() -> None:
    values = pd.DataFrame([[1.0, np.nan, 3.5], [-2.0, 0.25, 8.0]], index=["r1", "r2"], columns=["c1", "c2", "c3"])
    labels = values.map(lambda v: f"{v:.1f}")
    fig, (theirs, ours) = plt.subplots(1, 2)
    sns.heatmap(values, annot=labels, fmt="", cmap="viridis", ax=theirs)
    charts.heatmap(ours, values, cmap="viridis", labels=labels)

    def texts(ax):
        return [(t.get_position(), t.get_text(), t.get_color()) for t in ax.texts]

    assert texts(ours) == texts(theirs)  # the NaN cell unlabelled; dark grey on light cells, white on dark
    assert [t.get_text() for t in ours.get_yticklabels()] == ["r1", "r2"] and ours.get_ylim() == theirs.get_ylim()
    plt.close(fig)


def test_a_gain_heatmap_is_centred_on_no_gain() -> None:
    gain = pd.DataFrame([[np.nan, -3.0], [0.0, np.nan]], index=["BIOSSES", "BioASQ"], columns=["BIOSSES", "BioASQ"])
    fig = plots.score_heatmap(gain, "gain", cmap="RdBu_r", centre=0)
    assert fig.axes[0].collections[0].get_clim() == (-3.0, 3.0)
    plt.close(fig)


def test_error_bars_sit_on_their_bars_and_a_missing_spread_draws_none() -> None:
    frame = FRAME.assign(sd=[1.0, 2.0, np.nan, 0.5, 1.0, 1.5, 1.0])
    ax = plt.figure().add_subplot()
    drawn = charts.bars(ax, frame, "task", "score", "model", error="sd")
    (bar, *_), errors = drawn["A"].patches, drawn["A"].errorbar
    segments = errors.lines[2][0].get_segments()
    assert segments[0][:, 0].tolist() == [bar.get_x() + bar.get_width() / 2] * 2
    assert segments[0][:, 1].tolist() == [61.0, 63.0]  # NER/A: mean 62 of 60 and 64, the mean sd 1
    assert segments[2][:, 1].tolist() == [50.0, 50.0]  # Coref/A: no spread
    plt.close("all")
