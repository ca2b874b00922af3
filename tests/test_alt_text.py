"""A figure's alt text: written into its PNG by the chapters and field plots, set on the page's image by the
book's Sphinx extension (medibio.book.alt_text) where Sphinx would write the file's hashed path."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from docutils import nodes
from docutils.utils import new_document
from matplotlib.figure import Figure

from medibio.book import alt_text
from medibio.core import charts


def _saved(path: Path, fig: Figure, alt: str = "") -> Path:
    fig.savefig(path, format="png", metadata=charts.png_metadata(fig, alt))
    return path


def test_a_figure_is_described_by_its_title_or_the_words_given(tmp_path: Path) -> None:
    panels = Figure()
    for name in ("abstracts", "full text"):
        panels.add_subplot(1, 2, 1 if name == "abstracts" else 2).set_title(name)
    assert charts.title(panels) == "abstracts; full text"
    panels.suptitle("Loss per arm")
    assert charts.title(panels) == "Loss per arm"
    assert alt_text.png_description(_saved(tmp_path / "a.png", panels)) == "Loss per arm"
    assert alt_text.png_description(_saved(tmp_path / "b.png", panels, "Forest plot of 8 claims")) == "Forest plot of 8 claims"
    untitled = Figure()
    untitled.add_subplot()
    assert charts.png_metadata(untitled) == {}
    (tmp_path / "c.png").write_text("not a PNG", encoding="utf-8")
    assert alt_text.png_description(tmp_path / "c.png") == "" == alt_text.png_description(tmp_path / "missing.png")


def test_the_page_image_gets_the_png_description_and_keeps_an_alt_it_has(tmp_path: Path) -> None:
    fig = Figure()
    fig.add_subplot().set_title("Test score per dataset")
    _saved(tmp_path / "hash.png", fig)
    document = new_document("page")
    bare = nodes.image(uri="hash.png", candidates={"image/png": "hash.png"})
    given = nodes.image(uri="hash.png", alt="said by the author", candidates={"image/png": "hash.png"})
    document += [bare, given]
    alt_text._described(SimpleNamespace(srcdir=str(tmp_path)), document)
    assert bare["alt"] == "Test score per dataset" and given["alt"] == "said by the author"
