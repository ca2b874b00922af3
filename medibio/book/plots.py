"""Figures of the book that no analysis module owns (paper numbers, audit, comparisons), drawn as seaborn would
(:mod:`medibio.core.charts`) without importing it.

Each function takes a tidy DataFrame, returns a matplotlib Figure and never shows it: the notebook
records it (``chapter.figure``) and Jupyter displays it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from medibio.core import charts


def _figure(width: float = 7.0, height: float = 4.0) -> tuple[Any, Any]:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(width, height), layout="constrained")
    return fig, ax


def aggregate_readings(audit: pd.DataFrame, macro_reading: str) -> Any:
    """Each printed "BLURB Avg." next to the official BLURB score of the same column (audit rows)."""
    rows = audit[audit["alternative_reading"] == macro_reading]
    tidy = pd.concat([
        pd.DataFrame({"column": rows["where"], "score": rows["reported"].astype(float),
                      "aggregate": "printed BLURB Avg. (mean of 13 datasets)"}),
        pd.DataFrame({"column": rows["where"], "score": rows["alternative"].astype(float),
                      "aggregate": "official BLURB score (mean of 6 groups)"}),
    ])
    tidy["column"] = tidy["column"].str.replace(", BLURB Avg.", "", regex=False)
    fig, ax = _figure(7.5, 0.45 * max(len(rows), 4) + 1.2)
    charts.bars(ax, tidy, "column", "score", "aggregate", horizontal=True, legend=False)
    ax.set_xlim(60, 90)
    ax.set_title("Each printed BLURB Avg. beside the official BLURB score of its column")
    ax.set_xlabel("score")
    ax.set_ylabel("")
    _legend_below(fig, ax)
    return fig


def score_heatmap(frame: pd.DataFrame, title: str, vmin: float | None = None, vmax: float | None = None,
                  cmap: str = "viridis", p_values: pd.DataFrame | None = None, centre: float | None = None) -> Any:
    """A labelled heatmap of a rows x columns score table; with ``p_values`` (same shape), cells whose
    difference is significant at 95% get a star and the title says so; with ``centre`` (a diverging colour map's
    middle, e.g. no gain), the colours run as far on either side of it, so that the centre is the map's."""
    values = frame.astype(float)
    if centre is not None:
        reach = float(np.nanmax(np.abs(values.to_numpy() - centre), initial=0.0)) or 1.0
        vmin, vmax = centre - reach, centre + reach
    labels = values.map(lambda v: "" if pd.isna(v) else f"{v:.1f}")
    if p_values is not None:
        p = p_values.reindex(index=frame.index, columns=frame.columns).astype(float)
        labels = labels.where(~(p < 0.05), labels + "*")
        title += "  (* significant at 95%, paired bootstrap)"
    fig, ax = _figure(0.9 * len(frame.columns) + 3.5, 0.38 * len(frame) + 1.4)
    charts.heatmap(ax, values, cmap=cmap, vmin=vmin, vmax=vmax, labels=labels, colorbar={"shrink": 0.8})
    ax.set_title(title)
    ax.set_xlabel("")
    ax.set_ylabel("")
    return fig


def mean_std_bars(frame: pd.DataFrame, x: str, y: str, hue: str, err: str, title: str) -> Any:
    """Grouped bars with ± error bars (e.g. SciERC F1 mean ± std per task and model)."""
    fig, ax = _figure(6.5, 3.8)
    charts.bars(ax, frame, x, y, hue, error=err)
    ax.set_title(title)
    ax.set_xlabel("")
    return fig


def lines(frame: pd.DataFrame, x: str, y: str, hue: str | None, title: str, logy: bool = False) -> Any:
    """A line plot of tidy data (learning-rate schedules, loss curves, dev curves)."""
    fig, ax = _figure(7.0, 3.6)
    charts.lines(ax, frame, x, y, hue)
    if logy:
        ax.set_yscale("log")
    ax.set_title(title)
    return fig


def line_panels(frame: pd.DataFrame, x: str, y: str, panel: str, hue: str, title: str, columns: int = 3) -> Any:
    """Tidy lines in one small panel per value of ``panel`` (a study arm), each with its own short legend of
    ``hue``, sharing both axes: sixteen curves in one axes would hide each other and need a legend taller
    than the plot."""
    import matplotlib.pyplot as plt

    panels = list(dict.fromkeys(frame[panel]))
    rows = -(-len(panels) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(3.4 * columns, 2.6 * rows + 0.6), sharex=True, sharey=True,
                             layout="constrained", squeeze=False)
    for ax, name in zip(axes.flat, panels, strict=False):
        part = frame[frame[panel] == name]
        charts.lines(ax, part, x, y, hue, linewidth=1.2)
        ax.set_title(str(name), fontsize=10)
        ax.legend(fontsize=7, title=None, loc="upper right", frameon=False)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_axis_off()
    for ax in axes.flat:
        ax.label_outer()  # axis labels where the shared axes show their numbers, as seaborn's
    fig.suptitle(title)
    return fig


def paper_vs_ours_bars(frame: pd.DataFrame, title: str, paper: str = "paper", ours: str = "ours",
                       spread: str | None = None) -> Any:
    """Per-row bars of the paper's number and ours (with our seed spread as error bars)."""
    fig, ax = _figure(7.5, 0.5 * max(len(frame), 3) + 1.5)
    y = np.arange(len(frame))
    height = 0.38
    ax.barh(y - height / 2, frame[paper].astype(float), height, label=paper, color="#8da0cb")
    if spread is not None and spread not in frame:
        raise KeyError(f"no spread column {spread!r} to draw error bars from; columns: {list(frame.columns)}")
    err = frame[spread].astype(float).fillna(0).to_numpy() if spread is not None else None
    ax.barh(y + height / 2, frame[ours].astype(float), height, xerr=err,
            label=ours if ours.startswith("ours") else f"ours ({ours})", color="#fc8d62", capsize=3)
    ax.set_yticks(y, [str(i) for i in frame.index])
    ax.invert_yaxis()
    ax.set_xlabel("score (0–100)")
    ax.set_title(title)
    _legend_below(fig, ax)
    return fig


def _legend_below(fig: Any, ax: Any) -> None:
    """The legend in a row under the axes: inside them it hid the lowest bars' ends and error bars."""
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=len(labels), fontsize="small", frameon=False)
