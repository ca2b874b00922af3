"""The claims page's first screen: a forest plot of every tested claim and the compact table under it.

A reader of "What holds up" should see the answer before the method: each tested claim's difference A − B with
its interval, where zero and the claim's margin ±δ lie, and where the paper's own effect would put it. These
functions read the verdict rows (:class:`medibio.book.verdicts.Row`) through ``getattr`` with fallbacks, so
they draw the same page whether or not a row carries the paper's effect in our statistic and the verdict in
words with what keeps a comparison from testing the claim (:data:`PAPER_EFFECT` and :data:`WORDS` name the
attributes tried).
"""

from __future__ import annotations

import html
import math
import re
import textwrap
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pandas as pd

from medibio.book import rules
from medibio.book.numbers import counted

# attributes a verdict row may carry, tried in this order (the first present and not empty wins)
PAPER_EFFECT = ("paper_effect", "paper_in_ours", "paper_diff_ours")
WORDS = ("verdict_words", "verdict_in_words", "verdict_text", "verdict")
LABEL = ("verdict_label", "verdict")
# what kept a claim from being tested, as the headline names it
_WHY = {rules.UNTESTABLE[rules.FLOOR]: "a floor", rules.UNTESTABLE[rules.SCALE_MISMATCH]: "a scale mismatch",
        rules.UNTESTABLE[rules.PRECISIONS]: "arms computed in different precisions"}
COLOURS = {"supported": "#1a7f37", "contradicted": "#b42318", "no difference larger than δ": "#1f5fbf",
           "inconclusive": "#6e6e6e"}
UNTESTABLE_COLOUR = "#8c8c8c"
PAPER_COLOUR = "#e08a00"
NARROW_INCHES = 3.6  # the narrow figure's width: about a phone's column at 110 dpi (~400 px), drawn at its size
NARROW_TEXT_PT = 9.5  # its text: ~14 px on that column
# the section that holds the runs of the claims a recorded profile tests, where it is not the claim's own: the
# intermediate fine-tuning claims read the cpu-ift runs, which the Tables 1-2 chapter leads with
def _attr(obj: Any, names: Sequence[str], default: Any = None) -> Any:
    for name in names:
        value = getattr(obj, name, None)
        if value is not None and value != "" and not (isinstance(value, float) and math.isnan(value)):
            return value
    return default


def _number(value: Any) -> float | None:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) else value


def tested(found: Sequence[Any]) -> list[Any]:
    """The rows whose claim our runs tested (an interval exists)."""
    return [r for r in found if _number(getattr(r.ours, "low", None)) is not None]


def paper_effect(row: Any) -> float | None:
    """The paper's effect on the claim's own scale: in our statistic where the row carries it, else the
    difference the paper prints."""
    value = _number(_attr(row, PAPER_EFFECT))
    return value if value is not None else _number(getattr(row.paper, "diff", None))


def words(row: Any) -> str:
    """The verdict in words (the row's own wording where it has one)."""
    return str(_attr(row, WORDS, ""))


def scale(row: Any) -> str:
    """The scale our runs tested a claim at, short: the model and its size (the start of the row's scale, up to
    the parameters; its pretraining, the fine-tuning budget and the machine are in the claim's section)."""
    first = str(getattr(row.ours, "scale", "") or "").split(";")[0].strip()
    sized = re.match(r".*?parameters\)", first)
    return sized.group(0) if sized else first


def evidence_link(row: Any) -> str:
    """Where a verdict's runs are shown, relative to a chapter page (the claim's own link: its evidence's section)."""
    return str(getattr(row, "link", "") or "")


def _colour(row: Any) -> str:
    """The measured verdict's colour, grey where the design could not test the claim."""
    if label(row).startswith("not testable"):
        return UNTESTABLE_COLOUR
    return COLOURS.get(str(getattr(row, "verdict", "")), "#333333")


def _sign(side: int) -> str:
    return ">" if side > 0 else "≤"


def alt(found: Sequence[Any]) -> str:
    """What :func:`figure` shows, for a reader who cannot see it (the page's image's alt text)."""
    return (f"Forest plot of the {counted('tested claim')(len(tested(found)))}: for each, our difference A − B with its "
            "95% interval, coloured by verdict, beside zero, the margin ±δ and the paper's effect; the table below "
            "gives the same numbers")


def figure(found: Sequence[Any], narrow: bool = False) -> Any:
    """One line per tested claim: our difference A − B and its 95% interval (coloured by verdict), the margin
    ±δ as a band, zero as a line, the paper's effect as a diamond; the claim and its verdict in words label the
    line (A and B and the claimed side are in the table under the figure).

    ``narrow`` draws it for a phone (:data:`NARROW_INCHES` wide, each label above its line rather than beside
    it), so that a page can show it there instead of shrinking the wide figure until its text cannot be read."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    shown = tested(found)
    size = (NARROW_INCHES, 0.66 * max(len(shown), 1) + 1.5) if narrow else (9.0, 0.44 * max(len(shown), 1) + 1.0)
    fig, ax = plt.subplots(figsize=size, layout="constrained")
    if not shown:
        ax.text(0.5, 0.5, "no claim is tested by this build's runs", ha="center", va="center",
                transform=ax.transAxes)
        ax.set_axis_off()
        return fig
    band = 0.16 if narrow else 0.38  # half the height of a row's ±δ band; a narrow row keeps room for its label
    ends = []
    for y, row in enumerate(shown):
        ours = row.ours
        delta = _number(getattr(row, "delta", None))
        if delta is not None:
            ax.fill_betweenx([y - band, y + band], -delta, delta, color="#dfe9f7", lw=0, zorder=0)
            ends += [-delta, delta]
        colour = _colour(row)
        ax.plot([ours.low, ours.high], [y, y], color=colour, lw=2.2, solid_capstyle="butt", zorder=2)
        ax.plot([ours.diff], [y], "o", color=colour, ms=6, zorder=3)
        ends += [ours.low, ours.high]
    ax.axvline(0, color="#222", lw=1, zorder=1)
    # the axis spans our intervals and the margins; a paper effect beyond them (BIOSSES: +35 points) is drawn at
    # the edge, pointing outwards, with its value, rather than squeezing every interval into a few pixels
    low, high = min(ends), max(ends)
    pad = 0.08 * (high - low or 1.0)
    low, high = low - pad, high + pad
    beyond = {}
    for y, row in enumerate(shown):
        effect = paper_effect(row)
        if effect is None:
            continue
        if low <= effect <= high:
            ax.plot([effect], [y], "D", color=PAPER_COLOUR, ms=6, mec="white", zorder=4)
            continue
        edge, marker, align = (high, ">", "right") if effect > high else (low, "<", "left")
        ax.plot([edge], [y], marker, color=PAPER_COLOUR, ms=7, zorder=4, clip_on=False)
        beyond[row.id] = f"paper {effect:+.1f}"
        if not narrow:  # a narrow figure says it in the row's label, where it cannot cover a line
            ax.annotate(beyond[row.id], (edge, y), xytext=(0, 6), textcoords="offset points", ha=align,
                        va="bottom", fontsize=8, color=PAPER_COLOUR)
    ax.set_xlim(low, high)
    ax.set_ylim(len(shown) - 0.5, -0.5)
    ax.grid(axis="y", visible=False)
    if narrow:
        # each row's label on one line above it, across the whole width: the claim, its verdict in words
        ax.set_yticks([])
        for y, row in enumerate(shown):
            text = f"{row.id}: {words(row)}" + (f" ({beyond[row.id]}, off the axis)" if row.id in beyond else "")
            ax.text(0.01, y - band - 0.04, "\n".join(textwrap.wrap(text, 45)), transform=ax.get_yaxis_transform(),
                    ha="left", va="bottom", fontsize=NARROW_TEXT_PT, color=_colour(row), linespacing=1.1, zorder=5,
                    bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.85, "pad": 0.5})
        ax.set_ylim(len(shown) - 0.5, -0.9)  # room above the first row for its label
        ax.set_xlabel("A − B (points)", fontsize=NARROW_TEXT_PT)
        ax.tick_params(axis="x", labelsize=NARROW_TEXT_PT)
    else:
        # each row's label: the claim and, under it in the verdict's colour, the verdict in words (wrapped), so
        # that the axes keep the figure's width rather than sharing it with a column of long labels on either side
        ax.set_yticks(range(len(shown)), [f"{r.id}\n" + "\n".join(textwrap.wrap(words(r), 34)) for r in shown],
                      fontsize=8.5)
        for label, row in zip(ax.get_yticklabels(), shown, strict=True):
            label.set_color(_colour(row))
        ax.set_xlabel("A − B in the claim's declared statistic (points)")
    handles = [Line2D([], [], color="#333", marker="o", lw=2.2, label="ours, 95% interval"),
               Patch(color="#dfe9f7", label="±δ (no difference larger than δ)"),
               Line2D([], [], color=PAPER_COLOUR, marker="D", lw=0, label="the paper's effect")]
    fig.legend(handles=handles, loc="outside upper center", ncol=1 if narrow else 3,
               fontsize=NARROW_TEXT_PT if narrow else 9, frameon=False)
    return fig


def _interval(ours: Any) -> str:
    return f"{ours.diff:+.2f} [{ours.low:+.2f}, {ours.high:+.2f}]"


def compact(found: Sequence[Any], links: bool = True) -> pd.DataFrame:
    """One row per claim, four columns a reader needs first: the claim, the paper's number, ours with its
    interval, the verdict in words with the scale it was tested at (a link to the section holding its runs)."""
    rows = []
    ids = {r.id for r in tested(found)}
    for r in found:
        effect = paper_effect(r)
        paper_verdict = str(getattr(r.paper, "verdict", "") or "")
        if effect is None:
            paper = paper_verdict or "no number printed"
        else:
            paper = f"{effect:+.2f}" + (f" ({paper_verdict})" if paper_verdict else "")
        ours = _interval(r.ours) if r.id in ids else "not tested here"
        tested_at = scale(r)
        text = html.escape(words(r) + (f" — {tested_at}" if tested_at and r.id in ids else ""))
        link = evidence_link(r)
        rows.append({"claim": f"{r.claim} ({r.a} − {r.b} {_sign(getattr(r, 'side', 1))} 0)",
                     "paper": paper, "ours A − B [95%]": ours,
                     "verdict": f'<a href="{html.escape(link, quote=True)}">{text}</a>' if links and link else text})
    return pd.DataFrame(rows, index=pd.Index([r.id for r in found], name="id"))


def label(row: Any) -> str:
    """The verdict a row counts under: its label where the design replaces the measured verdict (a floor, a
    scale mismatch, a proxy), else the measured verdict."""
    return str(_attr(row, LABEL, ""))


def made_by(found: Sequence[Any], profile: str) -> str:
    """What made the verdicts' numbers, for a caption: the profiles whose runs the tested claims read (``runs of
    profiles cpu-ift, cpu-study``); "" where that is only ``profile``, this build's own (its model says it)."""
    read = sorted({r.ours.profile for r in tested(found) if getattr(r.ours, "profile", "")})
    if not read or read == [profile]:
        return ""
    return f"recorded runs of profile{'s' if len(read) > 1 else ''} {', '.join(read)}"


def headline(found: Sequence[Any]) -> str:
    """The page's first sentence: how many claims this build's runs test and how many count under each verdict
    (the labels the table shows: a claim the design could not test is not counted as contradicted)."""
    shown = tested(found)
    counts = Counter(label(row) for row in shown)
    untestable = sorted(v for v in counts if v.startswith("not testable"))
    order = ([v for v in COLOURS if v in counts] + sorted(v for v in counts if v not in COLOURS and v not in
                                                          untestable))
    tally = [f"{counts[v]} {v}" for v in order]
    if untestable:
        why = ", ".join(_WHY.get(v, v) for v in untestable)
        tally.append(f"{sum(counts[v] for v in untestable)} run but not testable as designed ({why})")
    testable = [row for row in shown if not label(row).startswith("not testable")]
    excluded = sum(getattr(row, "paper_effect_excluded", None) is True for row in testable)
    rest = len(found) - len(shown)
    return (f"This build's runs test {len(shown)} of the paper's {len(found)} claims: {', '.join(tally) or 'none'}"
            + (f"; for {excluded} of the {len(testable)} the design could test, the paper's own effect lies outside "
               "our interval" if excluded else "")
            + f"; the other {rest} cannot be tested with the models and data this build has.")


def details(found: Sequence[Any], frame: pd.DataFrame) -> str:
    """A folded section per claim (HTML, anchored ``claim-<id>``) with every column of :func:`verdicts.frame`
    that has a value, so that the table on top stays four columns wide."""
    parts = []
    for row in found:
        values = frame.loc[row.id].drop(labels=["evidence"], errors="ignore")
        cells = "".join(f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>"
                        for k, v in values.items() if str(v).strip())
        cells += (f'<tr><th>evidence</th><td><a href="{html.escape(evidence_link(row), quote=True)}">'
                  f"{html.escape(str(row.where))}</a></td></tr>")
        parts.append(f'<details id="claim-{html.escape(row.id)}"><summary><strong>{html.escape(row.id)}</strong>: '
                     f"{html.escape(row.claim)} — <em>{html.escape(words(row))}</em></summary>"
                     f'<table class="claim-details">{cells}</table></details>')
    return "\n".join(parts)


def reading(found: Sequence[Any], runs: str) -> str:
    """A chapter's first sentence about the claims it leads with: each claim's difference, interval and
    verdict in words, on ``runs`` (what the runs are, in words)."""
    shown = tested(found)
    if not shown:
        return f"None of these claims is tested by {runs} in this build."
    parts = [f"{r.id} {_interval(r.ours)} ({words(r)})" for r in shown]
    return f"On {runs}, our difference A − B and its 95% interval per claim: " + "; ".join(parts) + "."
