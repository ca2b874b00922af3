"""Heatmaps, bars and lines drawn as seaborn draws them, with matplotlib alone.

Importing seaborn imports SciPy's statistics with it (about 1.5 s), which every chapter with a figure paid for
a heatmap, a bar or a line plot. These functions draw what those seaborn calls drew in this project:
categories in order of appearance, bars 0.8 wide dodged by hue in the style's colours at seaborn's 75%
saturation, the categorical axis without grid lines; heatmap cells annotated in a colour readable on them; a
line per hue level through the mean at each x, with a 95% bootstrap band of that mean where several values
share an x (seeded here, so a rebuilt figure is the same). The style itself is seaborn's whitegrid theme
(``medibio/book/theme.mplstyle``); seaborn's own colour maps (rocket, vlag) exist only once seaborn is
imported, so callers name matplotlib's.
"""

from __future__ import annotations

import colorsys
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

WIDTH = 0.8  # the width a category's bars take together, as seaborn's
SATURATION = 0.75  # seaborn's barplot saturation
BAND_RESAMPLES = 1000  # bootstrap resamples of a line's mean where several values share an x (seaborn's n_boot)


def levels(values: Sequence[Hashable] | pd.Series) -> list[Any]:
    """The distinct values in order of appearance (seaborn's order for categories and hue levels)."""
    return list(dict.fromkeys(values))


def _colours(count: int) -> list[Any]:
    """The first ``count`` colours of the style's cycle."""
    import matplotlib as mpl

    cycle = mpl.rcParams["axes.prop_cycle"].by_key()["color"]
    return [cycle[k % len(cycle)] for k in range(count)]


def _desaturated(colour: Any, proportion: float = SATURATION) -> tuple[float, float, float]:
    """``colour`` with its HLS saturation times ``proportion`` (seaborn's ``desaturate``)."""
    from matplotlib.colors import to_rgb

    hue, lightness, saturation = colorsys.rgb_to_hls(*to_rgb(colour))
    return colorsys.hls_to_rgb(hue, lightness, saturation * proportion)


def bars(ax: Any, frame: pd.DataFrame, category: str, value: str, hue: str | None = None, *,
         horizontal: bool = False, palette: Mapping[Any, Any] | None = None, dodge: bool = True,
         legend: bool = True, error: str | None = None) -> dict[Any, Any]:
    """Bars of the mean ``value`` per ``category`` (one bar per hue level side by side where ``dodge``), as
    ``seaborn.barplot`` without its error bars; with ``error``, a black ± bar of that column's value on each
    bar (none where it is missing). Returns each hue level's bar container."""
    categories = levels(frame[category])
    hues = levels(frame[hue]) if hue is not None else [None]
    colours = ([palette[level] for level in hues] if palette is not None else _colours(len(hues)))
    side = len(hues) if dodge and hue is not None else 1
    width = WIDTH / side
    drawn = {}
    for k, (level, colour) in enumerate(zip(hues, colours, strict=True)):
        part = frame if level is None else frame[frame[hue] == level]
        means = part.groupby(category, sort=False)[[value] + ([error] if error else [])].mean()
        means = means.reindex([c for c in categories if c in means.index])  # bars in the categories' order
        offset = (k - (side - 1) / 2) * width if side > 1 else 0.0
        at = np.array([categories.index(c) for c in means.index], dtype=float) + offset
        spread = {} if error is None else {
            "xerr" if horizontal else "yerr": np.nan_to_num(means[error].to_numpy(float)),
            "error_kw": {"ecolor": "black", "capsize": 3, "elinewidth": 1, "capthick": 1}}
        draw = ax.barh if horizontal else ax.bar
        drawn[level] = draw(at, means[value].to_numpy(float), width, color=_desaturated(colour),
                            label=None if level is None else str(level), **spread)
    ticks, names = np.arange(len(categories)), [str(c) for c in categories]
    if horizontal:
        ax.set_yticks(ticks, names)
        ax.set_ylim(len(categories) - 0.5, -0.5)
        ax.yaxis.grid(False)
        ax.set_xlabel(value)
        ax.set_ylabel(category)
    else:
        ax.set_xticks(ticks, names)
        ax.set_xlim(-0.5, len(categories) - 0.5)
        ax.xaxis.grid(False)
        ax.set_xlabel(category)
        ax.set_ylabel(value)
    if hue is not None and legend:
        ax.legend(title=hue)
    return drawn


def lines(ax: Any, frame: pd.DataFrame, x: str, y: str, hue: str | None = None, *, seed: int = 0,
          **line: Any) -> None:
    """A line per ``hue`` level through the mean ``y`` at each ``x`` (sorted), with a band of the 95% bootstrap
    interval of that mean where several values share an x, as ``seaborn.lineplot``."""
    hues = levels(frame[hue]) if hue is not None else [None]
    rng = np.random.default_rng(seed)
    for level, colour in zip(hues, _colours(len(hues)), strict=True):
        part = frame if level is None else frame[frame[hue] == level]
        grouped = part.groupby(x, sort=True)[y]
        mean = grouped.mean()
        xs, means = mean.index.to_numpy(), mean.to_numpy(float)
        ax.plot(xs, means, color=colour, label=None if level is None else str(level), **line)
        values = [group.to_numpy(float) for _, group in grouped]
        if any(len(v) > 1 for v in values):
            low, high = np.transpose([_mean_interval(v, rng) for v in values])
            ax.fill_between(xs, low, high, color=colour, alpha=0.2, linewidth=0)
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    if hue is not None:
        ax.legend(title=hue)


def _mean_interval(values: np.ndarray, rng: np.random.Generator) -> tuple[float, float]:
    """The 95% percentile-bootstrap interval of the mean of ``values`` (one value: itself)."""
    if len(values) < 2:
        return float(values[0]), float(values[0])
    means = values[rng.integers(0, len(values), size=(BAND_RESAMPLES, len(values)))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)


def _luminance(colour: Any) -> float:
    """WCAG relative luminance of a colour (seaborn's ``relative_luminance``)."""
    from matplotlib.colors import to_rgb

    rgb = np.array(to_rgb(colour))
    rgb = np.where(rgb <= 0.03928, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    return float(rgb @ [0.2126, 0.7152, 0.0722])


def heatmap(ax: Any, values: pd.DataFrame, *, cmap: str, vmin: float | None = None, vmax: float | None = None,
            labels: pd.DataFrame | None = None, font: float | None = None, colorbar: Mapping[str, Any] | None = None,
            square: bool = False, linewidths: float = 0.0, linecolor: str = "white") -> Any:
    """``values`` (rows × columns) as coloured cells with row and column names, a colour bar and, with
    ``labels`` (strings of the same shape), each cell's label in dark grey or white, whichever reads on it (as
    ``seaborn.heatmap``: x labels turned upright when they would overlap)."""
    data = np.ma.masked_invalid(values.to_numpy(float))
    mesh = ax.pcolormesh(data, cmap=cmap, vmin=vmin, vmax=vmax, linewidth=linewidths, edgecolor=linecolor)
    rows, columns = data.shape
    ax.set(xlim=(0, columns), ylim=(0, rows))
    ax.invert_yaxis()
    ax.grid(False)
    for spine in ax.spines.values():
        spine.set_visible(False)
    bar = ax.figure.colorbar(mesh, ax=ax, **(colorbar or {}))
    bar.outline.set_linewidth(0)
    ax.set_xticks(np.arange(columns) + 0.5, [str(c) for c in values.columns])
    ax.set_yticks(np.arange(rows) + 0.5, [str(i) for i in values.index], va="center")
    ax.set_xlabel(values.columns.name or "")
    ax.set_ylabel(values.index.name or "")
    if square:
        ax.set_aspect("equal")
    if labels is not None:
        mesh.update_scalarmappable()
        colours = mesh.get_facecolors()
        for k, (cell, text) in enumerate(zip(data.flat, labels.to_numpy().flat, strict=True)):
            if cell is np.ma.masked:
                continue
            ax.text(k % columns + 0.5, k // columns + 0.5, text, ha="center", va="center",
                    color=".15" if _luminance(colours[k]) > 0.408 else "w",
                    **({"fontsize": font} if font is not None else {}))
    ax.figure.draw_without_rendering()
    ticks = ax.get_xticklabels()
    extents = [t.get_window_extent() for t in ticks]
    if any(a.overlaps(b) for a, b in zip(extents, extents[1:], strict=False)):
        for t in ticks:
            t.set_rotation("vertical")
    return mesh


# The PNG text keyword (one of the PNG specification's) that carries a saved figure's description: the book
# reads it back as the image's alt text (medibio.book.alt_text), where Sphinx would otherwise give the file's path.
ALT_KEYWORD = "Description"


def title(fig: Any) -> str:
    """A figure's title in words: its suptitle, else its axes' titles; what a reader who cannot see it is told."""
    sup = getattr(fig, "_suptitle", None)
    if sup is not None and sup.get_text():
        return str(sup.get_text())
    return "; ".join(t for ax in fig.axes if (t := ax.get_title()))


def png_metadata(fig: Any, alt: str = "") -> dict[str, str]:
    """``savefig(metadata=...)`` of a PNG: its description (``alt``, else the figure's :func:`title`)."""
    text = alt or title(fig)
    return {ALT_KEYWORD: text} if text else {}
