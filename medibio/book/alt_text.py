"""A Sphinx extension: the alt text of a chapter's figure, from the PNG itself.

A figure a notebook displays reaches the page as a file Sphinx names by its hash, and with no ``alt`` Sphinx
writes that path as the image's alternative text: what a screen reader reads, and what shows where the image
cannot load. The book saves every figure with its description in the PNG's ``Description`` text chunk
(:func:`medibio.core.charts.png_metadata`: its title, or what the chapter says it shows), and this extension
copies it onto the image. Registered in ``_config.yml`` (``sphinx.extra_extensions``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from docutils import nodes

from medibio.core.charts import ALT_KEYWORD


def png_description(path: Path) -> str:
    """The ``Description`` text of a PNG; "" for a file without one, or one that is not a readable PNG."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as image:
            return str(getattr(image, "text", {}).get(ALT_KEYWORD, ""))
    except (OSError, UnidentifiedImageError, ValueError):
        return ""


def _described(app: Any, doctree: nodes.document) -> None:
    for image in doctree.findall(nodes.image):
        if image.get("alt"):
            continue
        source = image.get("candidates", {}).get("image/png") or image.get("uri", "")
        if not source.endswith(".png"):
            continue
        text = png_description(Path(app.srcdir) / source)
        if text:
            image["alt"] = text


def setup(app: Any) -> dict[str, Any]:
    # after Sphinx's image collector (priority 500), which resolves each image's file into ``candidates``
    app.connect("doctree-read", _described, priority=800)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
