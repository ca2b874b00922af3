"""The book's figure style file is seaborn's whitegrid theme at its notebook context, so chapters that apply the
file draw what ``seaborn.set_theme`` would have drawn, without importing seaborn (and SciPy) to set it."""

from __future__ import annotations

import subprocess
import sys

import matplotlib
import matplotlib.colors as mcolors
import matplotlib.style

from medibio.book.notebook import THEME


def _settings() -> dict[str, object]:
    out: dict[str, object] = {}
    for key, value in matplotlib.rcParams.items():
        if key == "axes.prop_cycle":
            value = [mcolors.to_hex(c) for c in value.by_key()["color"]]
        elif key == "lines.solid_capstyle":
            value = str(getattr(value, "value", value))
        out[key] = value
    return out


def test_the_style_file_sets_what_seaborn_set_theme_sets() -> None:
    import seaborn as sns

    with matplotlib.rc_context():
        matplotlib.rcdefaults()
        matplotlib.style.use(THEME)
        ours = _settings()
        matplotlib.rcdefaults()
        sns.set_theme(style="whitegrid", context="notebook")
        theirs = _settings()
    differ = {k: (ours[k], theirs[k]) for k in theirs if ours.get(k) != theirs[k]}
    assert set(differ) == {"image.cmap"}, differ  # seaborn's "rocket": the book draws no image
    assert theirs["axes.grid"] is True and ours["xtick.labelsize"] == 11.0


def test_a_chapter_setup_does_not_import_seaborn(tmp_path) -> None:
    code = ("import sys; from medibio.book import notebook as nb; "
            f"nb.setup('intro', 'smoke', '', {str(tmp_path)!r}); "
            "import matplotlib; print('seaborn' in sys.modules, matplotlib.rcParams['axes.grid'])")
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert shown[-2:] == ["False", "True"]
