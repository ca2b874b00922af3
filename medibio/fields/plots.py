"""The paper's Figures 2-4, written as PNG and SVG (drawn as seaborn would, :mod:`medibio.core.charts`).

Figures are built on ``matplotlib.figure.Figure`` objects (no pyplot global state), so they work headless
and inside notebooks; each function returns the paths it wrote (PNG first, then SVG).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd
from matplotlib.figure import Figure

from medibio.core import charts
from medibio.core.atomic import atomic_open
from medibio.fields.analysis import FieldAnalysis

GROUP_COLOURS = {"medicine": "#c0392b", "mathematics": "#2e86c1", "other": "#95a5a6", "overlap": "#8e44ad"}
CMAP = "magma_r"  # light to dark, as seaborn's rocket_r (which only an import of seaborn registers)
FIG2_SIZE = (13.0, 11.0)
FIG3_SIZE = (6.5, 5.5)
FIG4_SIZE = (13.0, 5.0)


def save(fig: Figure, out_dir: str | Path, stem: str) -> list[Path]:
    """Write ``stem.png`` (150 dpi) and ``stem.svg`` atomically; return both paths."""
    out = Path(out_dir)
    paths = []
    for ext in ("png", "svg"):
        path = out / f"{stem}.{ext}"
        with atomic_open(path, "wb") as fh:
            fig.savefig(fh, format=ext, dpi=150, bbox_inches="tight",
                        metadata={"Date": None} if ext == "svg" else charts.png_metadata(fig))
        paths.append(path)
    return paths


def _heatmap(c: pd.DataFrame, title: str, size: tuple[float, float], annot_fmt: str, font: float) -> Figure:
    fig = Figure(figsize=size)
    ax = fig.add_subplot(1, 1, 1)
    percent = c * 100
    charts.heatmap(ax, percent, cmap=CMAP, vmin=0, vmax=100, square=True, font=font,
                   labels=percent.map(lambda v: format(v, annot_fmt)), colorbar={"label": "C_ij (%)"},
                   linewidths=0.3, linecolor="white")
    ax.set_xlabel("field j (also carried)")
    ax.set_ylabel("field i (papers of)")
    ax.set_title(title)
    ax.tick_params(axis="x", labelrotation=90)
    ax.tick_params(axis="y", labelrotation=0)
    return fig


def build_figure2(analysis: FieldAnalysis, order: str = "group") -> Figure:
    """Figure 2: the 19x19 matrix C in percent (diagonal: papers of field i with no other field)."""
    fields = analysis.order(order)
    c = analysis.c.loc[fields, fields]
    n = analysis.counts.papers_with_field
    return _heatmap(c, f"Field co-occurrence C_ij = N_ij / N_i ({n:,} papers with a field)", FIG2_SIZE, ".0f", 7)


def build_figure3(analysis: FieldAnalysis, fields: Sequence[str] | None = None, group: str = "medicine") -> Figure:
    """Figure 3: the block of C for one group (default: medicine and its related fields)."""
    if fields is None:
        fields = analysis.groups[group].fields if group in analysis.groups else ("Medicine",)
    block = analysis.c.loc[list(fields), list(fields)]
    return _heatmap(block, f"C_ij within the {group}-related fields", FIG3_SIZE, ".1f", 10)


def figure2(analysis: FieldAnalysis, out_dir: str | Path, order: str = "group",
            stem: str = "fig2_field_correlation") -> list[Path]:
    """Write Figure 2 (PNG, SVG)."""
    return save(build_figure2(analysis, order), out_dir, stem)


def figure3(analysis: FieldAnalysis, out_dir: str | Path, fields: Sequence[str] | None = None,
            group: str = "medicine", stem: str = "fig3_medicine_block") -> list[Path]:
    """Write Figure 3 (PNG, SVG)."""
    return save(build_figure3(analysis, fields, group), out_dir, stem)


def figure4(analysis: FieldAnalysis, out_dir: str | Path, stem: str = "fig4_field_distribution") -> list[Path]:
    """Write Figure 4 (PNG, SVG)."""
    return save(build_figure4(analysis), out_dir, stem)


def build_figure4(analysis: FieldAnalysis) -> Figure:
    """Figure 4: share of papers per field coloured by group, and the union share B of each group."""
    table = analysis.table.set_index("field").loc[analysis.order("group")].reset_index()
    table["percent"] = table["share_of_papers"] * 100
    palette = {g: GROUP_COLOURS.get(g, "#7f8c8d") for g in table["group"].unique()}
    fig = Figure(figsize=FIG4_SIZE)
    ax1, ax2 = fig.subplots(1, 2, gridspec_kw={"width_ratios": [3.2, 1]})
    charts.bars(ax1, table, "field", "percent", "group", palette=palette, dodge=False)
    ax1.set_xlabel("")
    ax1.set_ylabel("papers with the field (% of papers with any field)")
    ax1.set_title("Distribution of the 19 MAG fields")
    ax1.tick_params(axis="x", labelrotation=90)
    shares = analysis.shares.copy()
    shares["percent"] = shares["share"] * 100
    charts.bars(ax2, shares, "group", "percent", "group",
                palette={g: GROUP_COLOURS.get(g, "#7f8c8d") for g in shares["group"]}, dodge=False, legend=False)
    for patch, value in zip(ax2.patches, shares["percent"], strict=False):
        ax2.annotate(f"{value:.1f}%", (patch.get_x() + patch.get_width() / 2, patch.get_height()),
                     ha="center", va="bottom", fontsize=9)
    ax2.set_xlabel("")
    ax2.set_ylabel("union share B (% of papers with any field)")
    ax2.set_title("Major disciplines")
    ax2.tick_params(axis="x", labelrotation=45)
    fig.tight_layout()
    return fig


def all_figures(analysis: FieldAnalysis, out_dir: str | Path) -> dict[str, list[Path]]:
    """Figures 2, 3 and 4 into ``out_dir``."""
    return {"figure2": figure2(analysis, out_dir), "figure3": figure3(analysis, out_dir),
            "figure4": figure4(analysis, out_dir)}
