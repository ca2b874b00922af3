"""Figures 2-4: files written (PNG + SVG, non-empty), figure sizes and axes."""

from __future__ import annotations

from pathlib import Path

import pytest

from medibio.fields import plots
from medibio.fields.analysis import analyse

FIX = Path(__file__).parent / "fixtures" / "fields"


@pytest.fixture(scope="module")
def analysis():
    return analyse(FIX / "records.jsonl", threads=1)


def test_figure_builders_shape(analysis):
    f2 = plots.build_figure2(analysis)
    assert tuple(f2.get_size_inches()) == plots.FIG2_SIZE
    assert len(f2.axes) == 2  # heatmap + colour bar
    assert len(f2.axes[0].get_xticklabels()) == 19 and f2.axes[0].get_yticklabels()[0].get_text() == "Medicine"
    f3 = plots.build_figure3(analysis)
    assert [t.get_text() for t in f3.axes[0].get_xticklabels()] == ["Medicine", "Biology", "Chemistry", "Psychology"]
    assert len(f3.axes[0].texts) == 16  # annotated 4x4 block
    f4 = plots.build_figure4(analysis)
    assert tuple(f4.get_size_inches()) == plots.FIG4_SIZE and len(f4.axes) == 2
    assert len(f4.axes[0].patches) >= 19  # one bar per field
    assert [t.get_text() for t in f4.axes[1].get_xticklabels()] == ["medicine", "mathematics", "overlap", "other"]


@pytest.mark.slow
def test_all_figures_written(analysis, tmp_path):
    paths = plots.all_figures(analysis, tmp_path)
    assert set(paths) == {"figure2", "figure3", "figure4"}
    for png, svg in paths.values():
        assert png.suffix == ".png" and png.read_bytes()[:4] == b"\x89PNG"
        assert svg.suffix == ".svg" and b"<svg" in svg.read_bytes()[:2000]
        assert png.stat().st_size > 10_000
