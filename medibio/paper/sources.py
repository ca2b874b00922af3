"""The paper's figures for *other* models, set against the publications that report them.

Tables 1, 4 and 7 quote BERT, LinkBERT, DeBERTa, SciDeBERTa and BioLinkBERT (Table 6 holds only the
paper's own configurations). :func:`compare` puts each quoted number beside the figure its own publication
prints; :func:`recheck_claims` redoes the paper's comparisons with the published figures instead of the
quoted ones; :func:`group_comparison` shows, per BLURB task group and for both overall aggregates, where
the IFT model stands against the quoted and the published baselines.

Published figures come from two files: BLURB's own Table 6 (:mod:`medibio.paper.blurb_paper`, nine encoders)
and ``data/published_baselines.csv`` (LinkBERT README, SciDeBERTa Table 5, DeBERTa README), one row per
(model, dataset, statistic) with its publication, the place in it and a URL pinned to a commit. A figure
that exists but could not be read here has status ``not available offline`` and no value; a model the
cited publication never evaluated on that task has status ``not reported``. Nothing is filled in from
memory.

References (strings, as in :mod:`medibio.paper.claims`):

* anything :func:`medibio.paper.claims.resolve` understands: the paper's printed cells (``T7|col|row``),
  ``MACRO|T7|col`` / ``PLAIN|T7|col``;
* ``PUB|model|item[|stat]``: a published figure; ``item`` is a dataset, ``BLURB score`` (as printed by
  the source), or an aggregate computed from the source's per-dataset figures: ``GROUP:NER``, ``PLAIN``
  (13-dataset mean, the paper's "BLURB Avg."), ``MACRO`` (official BLURB score);
* ``COL|name|item``: the same items over a column of the paper (:data:`PAPER_COLUMNS`).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import cache
from importlib import resources
from pathlib import Path

import pandas as pd

from medibio.core.errors import DataMissingError, InputFormatError
from medibio.paper import blurb_paper, claims, tables
from medibio.tasks import registry, scoring
from medibio.tasks.spec import Group

TRANSCRIBED, UNAVAILABLE, NOT_REPORTED = "transcribed", "not available offline", "not reported"
SOURCE_STATUSES = (TRANSCRIBED, UNAVAILABLE, NOT_REPORTED)
EQUAL, DIFFERS = "equal", "differs"
COMPARISON_STATUSES = (EQUAL, DIFFERS, UNAVAILABLE, NOT_REPORTED)
HOLDS, FAILS, PARTIAL, UNCHECKABLE = ("holds", "fails", "holds against the reachable figures",
                                      "not checkable offline")
STATS = ("mean", "std")  # a score over runs, or its spread (SciERC is printed as mean ± std)
_HEADER = ("model", "dataset", "stat", "value", "status", "publication", "locator", "url", "note")
_EPS = 1e-9

GU_URL = "https://arxiv.org/abs/2007.15779"
GU_DECIMALS = 2  # Gu et al. print every cell of their Table 6 with two decimals
LINK_T7 = "BioLinkBERT (base)"  # column header of Table 7
LINK_PUB = "BioLinkBERT-base"  # the same model in its own publication
SAME_SIZE = (*blurb_paper.models(), LINK_PUB)  # published BERT-base-size encoders (110M parameters)
SCIERC_MODELS = ("BERT", "DeBERTa", "SCIIE", "SciBERT", "S2ORC-SciBERT", "SciDeBERTa (CS)", "SciDeBERTa")
VARIANT_NOTE = ("the numbers are those of SciDeBERTa (CS), the computer-science variant; §V-B describes [12] "
                "as trained on S2ORC abstracts, whose own row (SciDeBERTa) reads 70.8 / 45.5 / 56.5")


@dataclass(frozen=True)
class Published:
    """One published figure (or why there is none), with where it was read."""

    model: str
    item: str
    stat: str
    value: float | None
    decimals: int | None
    status: str
    publication: str
    locator: str
    url: str
    note: str = ""


def csv_path() -> Path:
    return Path(str(resources.files("medibio.paper.data").joinpath("published_baselines.csv")))


def _canonical(item: str) -> str:
    try:
        return registry.get(item, "blurb").name
    except KeyError:
        return item


@cache
def _csv_rows(path: Path) -> tuple[Published, ...]:
    if not path.is_file():
        raise DataMissingError(path, "reinstall medibio: the published baselines ship inside the package")
    out = []
    with path.open(encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        if tuple(reader.fieldnames or ()) != _HEADER:
            raise InputFormatError(path, 1, "header " + ",".join(_HEADER), ",".join(reader.fieldnames or ()))
        for line, row in enumerate(reader, start=2):
            if None in row or any(v is None for v in row.values()):
                raise InputFormatError(path, line, f"{len(_HEADER)} comma-separated fields", str(row))
            status, text = row["status"], row["value"].strip()
            if row["stat"] not in STATS:
                raise InputFormatError(path, line, "stat " + " / ".join(STATS), row["stat"])
            if status not in SOURCE_STATUSES:
                raise InputFormatError(path, line, "status " + " / ".join(SOURCE_STATUSES), status)
            if (status == TRANSCRIBED) != bool(text):
                raise InputFormatError(path, line, "a value exactly when the status is 'transcribed'", text)
            try:
                value = float(text) if text else None
            except ValueError:
                raise InputFormatError(path, line, "a number in column 'value'", text) from None
            out.append(Published(row["model"], _canonical(row["dataset"]), row["stat"], value,
                                 tables.printed_decimals(text) if text else None, status, row["publication"],
                                 row["locator"], row["url"], row["note"]))
    return tuple(out)


@cache
def _gu_rows() -> tuple[Published, ...]:
    out = []
    for model in blurb_paper.models():
        cells = {**blurb_paper.scores(model), "BLURB score": blurb_paper.printed_blurb_score(model)}
        for item, value in cells.items():
            out.append(Published(model, item, "mean", value, GU_DECIMALS, TRANSCRIBED, blurb_paper.SOURCE,
                                 "Table 6", GU_URL))
    return tuple(out)


def published_table(path: Path | None = None) -> pd.DataFrame:
    """Every published figure this audit knows (BLURB Table 6 first, then the CSV), one row each."""
    rows = [*_gu_rows(), *_csv_rows(path or csv_path())]
    return pd.DataFrame([asdict(r) for r in rows])


def published(model: str, item: str, stat: str = "mean", path: Path | None = None) -> Published:
    """The figure ``model`` has for ``item`` in its publication; aggregates are computed from the cells.

    A transcribed row wins over an unavailable one for the same key (the LinkBERT README gives PubMedQA
    although the paper's table cannot be read here). Unknown keys raise ``KeyError``.
    """
    rows = [*_gu_rows(), *_csv_rows(path or csv_path())]
    if item in ("PLAIN", "MACRO") or item.startswith("GROUP:"):
        names = (registry.names() if item in ("PLAIN", "MACRO")
                 else [s.name for s in registry.by_group(Group(item.split(":", 1)[1]))])
        parts = [published(model, name, stat, path) for name in names]
        gaps = [p for p in parts if p.value is None]
        first = parts[0]
        if gaps:
            worst = UNAVAILABLE if any(p.status == UNAVAILABLE for p in gaps) else NOT_REPORTED
            return Published(model, item, stat, None, None, worst, first.publication, first.locator, first.url,
                             f"needs {', '.join(p.item for p in gaps)}, {worst}")
        values = {p.item: float(p.value or 0.0) for p in parts}
        agg = scoring.blurb_score(values).value if item == "MACRO" else sum(values.values()) / len(values)
        sources = sorted({p.locator for p in parts})
        return Published(model, item, stat, agg, min(p.decimals or 0 for p in parts), TRANSCRIBED,
                         first.publication, "; ".join(sources), first.url, f"mean of {', '.join(names)}"
                         if item != "MACRO" else "macro mean over the six groups")
    item = _canonical(item)
    hits = [r for r in rows if (r.model, r.item, r.stat) == (model, item, stat)]
    if not hits:
        raise KeyError(f"no published figure for {model!r} / {item!r} / {stat!r}")
    return next((r for r in hits if r.status == TRANSCRIBED), hits[0])


# --------------------------------------------------------------------------- paper columns

def _ift_column() -> dict[str, float]:
    cells = tables.column_scores(7, claims.IFT)
    return {**cells, "ChemProt": tables.cell(6, "#1", "ChemProt")}


PAPER_COLUMNS: dict[str, Callable[[], dict[str, float]]] = {
    # Table 7's IFT column with ChemProt from Table 6 #1 (77.80): the printed averages were computed so
    claims.IFT: _ift_column,
    f"{claims.IFT} (as printed)": lambda: tables.column_scores(7, claims.IFT),
    LINK_T7: lambda: tables.column_scores(7, LINK_T7),
}


def column_item(column: str, item: str) -> float:
    """A dataset, ``GROUP:g``, ``PLAIN`` or ``MACRO`` of one of :data:`PAPER_COLUMNS`."""
    cells = PAPER_COLUMNS[column]()
    if item == "PLAIN":
        return float(scoring.paper_average(cells).value)  # type: ignore[arg-type]
    if item == "MACRO":
        return float(scoring.blurb_score(cells).value)  # type: ignore[arg-type]
    if item.startswith("GROUP:"):
        return scoring.group_averages(cells)[item.split(":", 1)[1]]
    return cells[_canonical(item)]


# --------------------------------------------------------------------------- operands

@dataclass(frozen=True)
class Operand:
    """A resolved reference: its label, value (None when there is none) and status."""

    ref: str
    label: str
    value: float | None
    status: str


_ITEM_LABELS = {"PLAIN": "plain 13-dataset mean", "MACRO": "BLURB score (macro over groups)"}


def _item_label(item: str) -> str:
    if item.startswith("GROUP:"):
        return f"{item.split(':', 1)[1]} group mean"
    return _ITEM_LABELS.get(item, item)


def operand(ref: str) -> Operand:
    """Resolve a reference of any of the three kinds (see the module docstring)."""
    parts = ref.split("|")
    if parts[0] == "PUB":
        model, item, stat = parts[1], parts[2], parts[3] if len(parts) > 3 else "mean"
        hit = published(model, item, stat)
        label = f"{model}, {_item_label(item)}" + (f" {stat}" if stat != "mean" else "") + " (published)"
        return Operand(ref, label, hit.value, hit.status)
    if parts[0] == "COL":
        return Operand(ref, f"{parts[1]}, {_item_label(parts[2])} (paper, recomputed)",
                       column_item(parts[1], parts[2]), TRANSCRIBED)
    value = claims.resolve(ref)
    return Operand(ref, claims.ref_label(ref), None if math.isnan(value) else value, TRANSCRIBED)


# --------------------------------------------------------------------------- quoted numbers

@dataclass(frozen=True)
class Quote:
    """A number the paper prints for another model, and the published figure it should match."""

    table: int
    model: str  # column header in the paper
    quantity: str  # row label in the paper (or what was recomputed from it)
    paper: str  # reference to the paper's number
    source: str  # PUB reference of the published figure
    note: str = ""


def _quotes() -> tuple[Quote, ...]:
    out = [
        Quote(1, "BERT", "BIOSSES", "T1|BERT|BIOSSES", "PUB|BERT uncased|BIOSSES",
              "BLURB also prints BERT cased, 81.40; the paper does not say which BERT it ran"),
        Quote(1, "LinkBERT", "BIOSSES", "T1|LinkBERT|BIOSSES", "PUB|LinkBERT-base|BIOSSES",
              "BioLinkBERT-base has a BIOSSES figure in the LinkBERT paper (not available offline)"),
        Quote(1, "DeBERTa", "BIOSSES", "T1|DeBERTa|BIOSSES", "PUB|DeBERTa|BIOSSES"),
        Quote(1, "DeBERTa-MNLI", "BIOSSES", "T1|DeBERTa-MNLI|BIOSSES", "PUB|DeBERTa-MNLI|BIOSSES"),
    ]
    for task in ("NER", "JRE", "Coref"):
        for stat in ("mean", "std"):
            row = task if stat == "mean" else f"{task} std"
            out.append(Quote(4, "SciDeBERTa [12]", f"SciERC {row}", f"T4|SciDeBERTa|{row}",
                             f"PUB|SciDeBERTa (CS)|SciERC {task}|{stat}", VARIANT_NOTE))
    for name in registry.names():
        out.append(Quote(7, LINK_T7, name, f"T7|{LINK_T7}|{name}", f"PUB|{LINK_PUB}|{name}"))
    for group, label in (("NER", "NER Avg."), ("RE", "RE Avg."), ("QA", "QnA Avg.")):
        out.append(Quote(7, LINK_T7, label, f"T7|{LINK_T7}|{label}", f"PUB|{LINK_PUB}|GROUP:{group}"))
    out.append(Quote(7, LINK_T7, "BLURB Avg.", f"T7|{LINK_T7}|BLURB Avg.", f"PUB|{LINK_PUB}|PLAIN",
                     "the paper's overall figure is the plain mean of its 13 cells"))
    out.append(Quote(7, LINK_T7, "BLURB score of the printed cells", f"MACRO|T7|{LINK_T7}",
                     f"PUB|{LINK_PUB}|BLURB score",
                     "not printed by the paper: its 13 cells averaged the official way, beside the BLURB "
                     "score the LinkBERT authors publish"))
    return tuple(out)


QUOTES: tuple[Quote, ...] = _quotes()
COMPARISON_COLUMNS = ("id", "table", "model", "quantity", "paper_value", "source_value", "difference",
                      "tolerance", "status", "source_model", "publication", "locator", "url", "note")


def _paper_decimals(ref: str) -> int | None:
    """Printed decimals of a paper cell (None for a recomputed number)."""
    head, *rest = ref.split("|")
    if head == "T4":
        return 1  # Table 4 prints every mean and std with one decimal
    if head in ("T1", "T6", "T7") and len(rest) == 2:
        frame = tables.load_table(int(head[1:]))
        canon = _canonical(rest[1])
        hit = frame[(frame["model"] == rest[0]) & ((frame["label"] == rest[1]) | (frame["dataset"] == canon))]
        return int(hit["decimals"].iloc[0])
    return None


def _compare_one(quote: Quote) -> dict[str, object]:
    paper = operand(quote.paper).value
    _, model, item, *stat = quote.source.split("|")
    src = published(model, item, stat[0] if stat else "mean")
    row: dict[str, object] = {
        "id": f"t{quote.table}-{quote.model}-{quote.quantity}", "table": quote.table, "model": quote.model,
        "quantity": quote.quantity, "paper_value": paper, "source_value": src.value, "difference": None,
        "tolerance": None, "status": src.status, "source_model": model, "publication": src.publication,
        "locator": src.locator, "url": src.url,
        "note": "; ".join(n for n in (quote.note, src.note) if n)}
    if src.value is not None and paper is not None:
        decimals = [d for d in (_paper_decimals(quote.paper), src.decimals) if d is not None]
        tol = 0.5 * 10.0 ** -min(decimals)
        diff = paper - src.value
        row.update(difference=diff, tolerance=tol, status=EQUAL if abs(diff) <= tol + _EPS else DIFFERS)
    return row


def compare(quotes: tuple[Quote, ...] = QUOTES) -> pd.DataFrame:
    """One row per quoted number: paper value, published value, difference and status.

    Equal means equal at the coarser of the two printed precisions (half a unit of the last digit: the
    README's 91.4 matches anything from 91.35 to 91.45).
    """
    frame = pd.DataFrame([_compare_one(q) for q in quotes], columns=list(COMPARISON_COLUMNS))
    for col in ("paper_value", "source_value", "difference", "tolerance"):
        frame[col] = frame[col].astype(float)
    return frame


def comparison_summary(frame: pd.DataFrame) -> str:
    counts = frame["status"].value_counts()
    parts = [f"{int(counts.get(s, 0))} {s}" for s in COMPARISON_STATUSES]
    return f"{len(frame)} quoted numbers: " + ", ".join(parts)


# --------------------------------------------------------------------------- claims, redone

@dataclass(frozen=True)
class SourceClaim:
    """A comparison the paper makes, redone with published figures.

    ``as_printed`` and ``with_sources`` each hold a subject reference followed by its rivals; ``greater``
    holds when the subject beats every rival, ``comparable`` when it is within one point of each, ``rank``
    gives the subject's best possible rank among the rivals (a claimed rank below it fails).
    """

    id: str
    location: str
    context: str
    kind: str
    as_printed: tuple[str, ...]
    with_sources: tuple[str, ...]
    reported: float | None = None
    note: str = ""


def _all(item: str, models: tuple[str, ...] = SAME_SIZE) -> tuple[str, ...]:
    return tuple(f"PUB|{m}|{item}" for m in models)


IFT, LINK = claims.IFT, LINK_T7
BLURB_SCORES = (*_all("BLURB score"), "PUB|BioLinkBERT-large|BLURB score")
CLAIMS: tuple[SourceClaim, ...] = (
    SourceClaim("sota-ner", "Abstract; §I (3rd contribution); §V-D; §VI", "IFT model best of its size on NER",
                "greater", (f"T7|{IFT}|NER Avg.", f"T7|{LINK}|NER Avg."),
                (f"T7|{IFT}|NER Avg.", *_all("GROUP:NER"))),
    SourceClaim("sota-ss", "Abstract; §I (3rd contribution); §V-D; §VI",
                "IFT model best of its size on sentence similarity", "greater",
                (f"T7|{IFT}|BIOSSES", f"T7|{LINK}|BIOSSES"), (f"T7|{IFT}|BIOSSES", *_all("BIOSSES"))),
    SourceClaim("sota-qna", "Abstract; §I (3rd contribution); §V-D; §VI",
                "IFT model best of its size on question answering", "greater",
                (f"T7|{IFT}|QnA Avg.", f"T7|{LINK}|QnA Avg."), (f"T7|{IFT}|QnA Avg.", *_all("GROUP:QA"))),
    SourceClaim("sota-chemprot", "Abstract; §I (3rd contribution); §V-D; §VI",
                "IFT model best of its size on ChemProt (Table 7 as printed, 93.04)", "greater",
                (f"T7|{IFT}|ChemProt", f"T7|{LINK}|ChemProt"), (f"T7|{IFT}|ChemProt", *_all("ChemProt")),
                note=claims.CHEMPROT_NOTE),
    SourceClaim("sota-chemprot-t6", "Abstract; §I (3rd contribution); §V-D; §VI",
                "the same with the model's ChemProt score from Table 6 #1 (77.80)", "greater",
                ("T6|#1|ChemProt", f"T7|{LINK}|ChemProt"), ("T6|#1|ChemProt", *_all("ChemProt"))),
    SourceClaim("biolinkbert-pico", "§V-D, 1st paragraph", "BioLinkBERT ahead of the IFT model on PICO",
                "greater", (f"T7|{LINK}|EBM-PICO", f"T7|{IFT}|EBM-PICO"),
                (f"PUB|{LINK_PUB}|EBM-PICO", f"T7|{IFT}|EBM-PICO")),
    SourceClaim("biolinkbert-re", "§V-D, 1st paragraph", "BioLinkBERT ahead on relation extraction",
                "greater", (f"T7|{LINK}|RE Avg.", f"T7|{IFT}|RE Avg."),
                (f"PUB|{LINK_PUB}|GROUP:RE", f"T7|{IFT}|RE Avg.")),
    SourceClaim("biolinkbert-dc", "§V-D, 1st paragraph", "BioLinkBERT ahead on document classification",
                "greater", (f"T7|{LINK}|HoC", f"T7|{IFT}|HoC"), (f"PUB|{LINK_PUB}|HoC", f"T7|{IFT}|HoC")),
    SourceClaim("biolinkbert-overall-plain", "Table 7 (bold BLURB Avg.)",
                "BioLinkBERT ahead overall, plain 13-dataset mean", "greater",
                (f"T7|{LINK}|BLURB Avg.", f"T7|{IFT}|BLURB Avg."),
                (f"PUB|{LINK_PUB}|PLAIN", f"T7|{IFT}|BLURB Avg.")),
    SourceClaim("biolinkbert-overall-macro", "Table 7 (bold BLURB Avg.)",
                "BioLinkBERT ahead overall, official BLURB score", "greater",
                (f"MACRO|T7|{LINK}", f"COL|{IFT}|MACRO"), (f"PUB|{LINK_PUB}|BLURB score", f"COL|{IFT}|MACRO")),
    SourceClaim("leaderboard-rank", "§VI, 1st paragraph", "11th on the BLURB leaderboard", "rank",
                (f"T7|{IFT}|BLURB Avg.", *BLURB_SCORES), (f"COL|{IFT}|MACRO", *BLURB_SCORES), 11,
                note="the leaderboard itself is not reachable offline; the published BLURB scores at hand "
                     "only bound the rank from below (as printed: the paper's 81.72 set against them)"),
    SourceClaim("biolinkbert-leads", "§II, 2nd paragraph", "BioLinkBERT leads the BLURB leaderboard",
                "greater", (), ("PUB|BioLinkBERT-large|BLURB score", *_all("BLURB score"), f"COL|{IFT}|MACRO"),
                note="checked among the published scores at hand only; the leaderboard is not reachable"),
    SourceClaim("pubmedbert-vs-biobert", "§III-A; §V-C, 2nd paragraph",
                "from-scratch PubMedBERT beats continually trained BioBERT", "greater", (),
                ("PUB|PubMedBERT uncased|BLURB score", "PUB|BioBERT cased|BLURB score")),
    SourceClaim("biolinkbert-vs-pubmedbert", "§III-A", "continually trained BioLinkBERT beats PubMedBERT",
                "greater", (), (f"PUB|{LINK_PUB}|BLURB score", "PUB|PubMedBERT uncased|BLURB score")),
    SourceClaim("t1-bert-vs-deberta", "§IV-B, Table 1", "BERT above DeBERTa on BIOSSES", "greater",
                ("T1|BERT|BIOSSES", "T1|DeBERTa|BIOSSES"), ("PUB|BERT uncased|BIOSSES", "T1|DeBERTa|BIOSSES"),
                note="DeBERTa has no published BIOSSES figure: the paper's own run stands in"),
    SourceClaim("t1-linkbert-vs-deberta", "§IV-B, Table 1", "LinkBERT above DeBERTa on BIOSSES", "greater",
                ("T1|LinkBERT|BIOSSES", "T1|DeBERTa|BIOSSES"), ("PUB|LinkBERT-base|BIOSSES", "T1|DeBERTa|BIOSSES")),
    SourceClaim("t1-mnli-comparable", "§IV-B, Table 1", "DeBERTa after MNLI matches BERT on BIOSSES",
                "comparable", ("T1|DeBERTa-MNLI|BIOSSES", "T1|BERT|BIOSSES"),
                ("T1|DeBERTa-MNLI|BIOSSES", "PUB|BERT uncased|BIOSSES")),
    SourceClaim("t4-ner", "§V-B", "SciDeBERTa v2 beats SciDeBERTa on SciERC NER", "greater",
                ("T4|SciDeBERTa v2|NER", "T4|SciDeBERTa|NER"),
                ("T4|SciDeBERTa v2|NER", "PUB|SciDeBERTa (CS)|SciERC NER")),
    SourceClaim("t4-jre", "§V-B", "SciDeBERTa v2 beats SciDeBERTa on SciERC JRE", "greater",
                ("T4|SciDeBERTa v2|JRE", "T4|SciDeBERTa|JRE"),
                ("T4|SciDeBERTa v2|JRE", "PUB|SciDeBERTa (CS)|SciERC JRE")),
    SourceClaim("t4-coref", "§VI, 1st paragraph", "SciDeBERTa v2 better than its predecessor (Coref)",
                "greater", ("T4|SciDeBERTa v2|Coref", "T4|SciDeBERTa|Coref"),
                ("T4|SciDeBERTa v2|Coref", "PUB|SciDeBERTa (CS)|SciERC Coref")),
    *(SourceClaim(f"t4-{task.lower()}-abstract-variant", "§V-B (SciDeBERTa described as abstract-trained)",
                  f"SciDeBERTa v2 beats the abstract-trained SciDeBERTa on SciERC {task}", "greater", (),
                  (f"T4|SciDeBERTa v2|{task}", f"PUB|SciDeBERTa|SciERC {task}"), note=VARIANT_NOTE)
      for task in ("NER", "JRE", "Coref")),
    SourceClaim("t4-sota-ner", "Abstract; §I (1st contribution)", "SciDeBERTa v2 state of the art on SciERC NER",
                "greater", ("T4|SciDeBERTa v2|NER", "T4|SciDeBERTa|NER"),
                ("T4|SciDeBERTa v2|NER", *_all("SciERC NER", SCIERC_MODELS)),
                note="checked against every model of SciDeBERTa's Table 5, the comparison the paper cites"),
)
CLAIM_COLUMNS = ("id", "location", "context", "kind", "printed_subject", "printed_rival", "printed_margin",
                 "printed_verdict", "source_subject", "source_rival", "source_margin", "verdict", "changed",
                 "unreachable", "detail", "note")


def _judge(kind: str, refs: tuple[str, ...], reported: float | None) -> dict[str, object]:
    """Subject vs rivals on one side: best rival, margin, verdict and what could not be read."""
    if not refs:
        return {"subject": None, "rival": "", "margin": None, "verdict": "", "unreachable": [], "detail": ""}
    subject, rivals = operand(refs[0]), [operand(r) for r in refs[1:]]
    known = [r for r in rivals if r.value is not None]
    gaps = [f"{r.label}: {r.status}" for r in rivals if r.value is None]
    if subject.value is None:
        gaps.insert(0, f"{subject.label}: {subject.status}")
        return {"subject": None, "rival": "", "margin": None, "verdict": UNCHECKABLE, "unreachable": gaps,
                "detail": f"no figure for {subject.label}"}
    if not known:
        return {"subject": subject.value, "rival": "", "margin": None, "verdict": UNCHECKABLE,
                "unreachable": gaps, "detail": "no rival figure can be read"}
    best = max(known, key=lambda r: r.value)  # type: ignore[arg-type, return-value]
    margin = subject.value - best.value  # type: ignore[operator]
    if kind == "rank":
        above = sum(r.value > subject.value for r in known)  # type: ignore[operator]
        verdict = FAILS if reported is not None and above + 1 > reported else UNCHECKABLE
        detail = (f"{subject.label} = {subject.value:.2f}: {above} of the {len(known)} published scores at hand "
                  f"are higher, so its rank is at least {above + 1}")
        return {"subject": subject.value, "rival": best.label, "margin": float(above + 1), "verdict": verdict,
                "unreachable": gaps, "detail": detail}
    if kind == "comparable":
        worst = max(known, key=lambda r: abs(subject.value - r.value))  # type: ignore[operator]
        margin = subject.value - worst.value  # type: ignore[operator]
        ok, best = abs(margin) <= claims.COMPARABLE_POINTS + _EPS, worst
    else:
        ok = margin > 0
    verdict = FAILS if not ok else (PARTIAL if gaps else HOLDS)
    detail = f"{subject.label} {subject.value:.2f} vs {best.label} {best.value:.2f}: {margin:+.2f}"
    return {"subject": subject.value, "rival": best.label, "margin": margin, "verdict": verdict,
            "unreachable": gaps, "detail": detail}


def _flipped(printed: object, source: object) -> bool:
    """True when the published figures turn a holding claim into a failing one or back."""
    holding = {HOLDS: True, PARTIAL: True, FAILS: False}
    return printed in holding and source in holding and holding[printed] != holding[source]


def recheck_claims(items: tuple[SourceClaim, ...] = CLAIMS) -> pd.DataFrame:
    """Each claim judged as printed and with the published figures (columns :data:`CLAIM_COLUMNS`).

    ``*_margin`` is subject minus its strongest rival (for ``rank`` claims: the best rank still possible);
    ``changed`` marks claims whose verdict flips between the printed and the published figures.
    """
    rows = []
    for claim in items:
        printed = _judge(claim.kind, claim.as_printed, claim.reported)
        source = _judge(claim.kind, claim.with_sources, claim.reported)
        detail = "; ".join(f"{side}: {d}" for side, d in (("as printed", printed["detail"]),
                                                            ("with sources", source["detail"])) if d)
        rows.append({
            "id": claim.id, "location": claim.location, "context": claim.context, "kind": claim.kind,
            "printed_subject": printed["subject"], "printed_rival": printed["rival"],
            "printed_margin": printed["margin"], "printed_verdict": printed["verdict"],
            "source_subject": source["subject"], "source_rival": source["rival"],
            "source_margin": source["margin"], "verdict": source["verdict"],
            "changed": _flipped(printed["verdict"], source["verdict"]),
            "unreachable": "; ".join(source["unreachable"]), "detail": detail, "note": claim.note})
    frame = pd.DataFrame(rows, columns=list(CLAIM_COLUMNS))
    for col in ("printed_subject", "printed_margin", "source_subject", "source_margin"):
        frame[col] = frame[col].astype(float)
    return frame


def claims_summary(frame: pd.DataFrame) -> str:
    counts = frame["verdict"].value_counts()
    parts = [f"{int(counts.get(v, 0))} {v}" for v in (HOLDS, PARTIAL, FAILS, UNCHECKABLE)]
    return f"{len(frame)} claims redone with published figures: " + ", ".join(parts)


# --------------------------------------------------------------------------- per group, both aggregates

GROUP_ROWS: tuple[tuple[str, str], ...] = (
    *((g.value, f"GROUP:{g.value}") for g in registry.GROUP_ORDER),
    ("ChemProt", "ChemProt"),
    ("BLURB Avg. (plain mean of 13)", "PLAIN"),
    ("BLURB score (macro over groups)", "MACRO"),
)
GROUP_COLUMNS = ("quantity", "ift", "biolinkbert_quoted", "biolinkbert_published", "best_published",
                 "best_published_model", "ift_minus_quoted", "ift_minus_published", "ift_minus_best", "ift_leads")
GROUP_HEADERS = {"ift": "IFT model", "biolinkbert_quoted": "BioLinkBERT, Table 7",
                 "biolinkbert_published": "BioLinkBERT, published", "best_published": "best published",
                 "best_published_model": "best published model", "ift_minus_quoted": "IFT - Table 7",
                 "ift_minus_published": "IFT - published BioLinkBERT", "ift_minus_best": "IFT - best published",
                 "ift_leads": "IFT leads"}


def _published_best(item: str) -> tuple[float | None, str, bool]:
    """Best reachable same-size published figure, its model, and whether some figure could not be read."""
    found, missing = [], False
    for model in SAME_SIZE:
        hit = published(model, "BLURB score" if item == "MACRO" else item)
        if hit.value is None:
            missing = True
        else:
            found.append((hit.value, model))
    if not found:
        return None, "", missing
    value, model = max(found)
    return value, model, missing


def group_comparison() -> pd.DataFrame:
    """Per BLURB group, ChemProt and both overall aggregates: the IFT model vs the baselines.

    The IFT and quoted-BioLinkBERT columns are recomputed from Table 7's cells (ChemProt of the IFT model
    from Table 6 #1, as its printed averages were). The published BioLinkBERT-base overall score is the
    one its authors print; ``ift_leads`` is ``yes``/``no``, or ``open`` when the IFT model is ahead of
    every figure that can be read but some published figure cannot.
    """
    rows = []
    for quantity, item in GROUP_ROWS:
        ift = column_item(IFT, item)
        quoted = column_item(LINK_T7, item)
        link = published(LINK_PUB, "BLURB score" if item == "MACRO" else item).value
        best, best_model, missing = _published_best(item)
        beaten = [v for v in (link, best) if v is not None]
        leads = "no" if any(v >= ift for v in beaten) else ("open" if missing or link is None else "yes")
        rows.append({"quantity": quantity, "ift": ift, "biolinkbert_quoted": quoted,
                     "biolinkbert_published": link, "best_published": best, "best_published_model": best_model,
                     "ift_minus_quoted": ift - quoted,
                     "ift_minus_published": None if link is None else ift - link,
                     "ift_minus_best": None if best is None else ift - best, "ift_leads": leads})
    frame = pd.DataFrame(rows, columns=list(GROUP_COLUMNS))
    numeric = [c for c in GROUP_COLUMNS if c not in ("quantity", "best_published_model", "ift_leads")]
    frame[numeric] = frame[numeric].astype(float)
    return frame


# --------------------------------------------------------------------------- as a page shows them

COMPARISON_HEADERS = {"model": "model", "quantity": "quantity", "paper_value": "paper",
                      "source_value": "published", "difference": "paper − published", "status": "status",
                      "locator": "where published"}
CLAIM_HEADERS = {"location": "where in the paper", "context": "what the paper says",
                 "printed_verdict": "as printed", "verdict": "with published figures", "detail": "numbers"}


def comparison_for_page(frame: pd.DataFrame) -> pd.DataFrame:
    """:func:`compare`'s rows as Appendix A shows them: one row label (the paper's table, "Table 1"), so the
    header is one row rather than a row of index names under the column names, and readable headers
    (:data:`COMPARISON_HEADERS`) instead of the frame's field names."""
    out = frame[list(COMPARISON_HEADERS)].rename(columns=COMPARISON_HEADERS)
    out.index = pd.Index([f"Table {t}" for t in frame["table"]], name="paper table")
    return out


def claims_for_page(frame: pd.DataFrame) -> pd.DataFrame:
    """:func:`recheck_claims`'s rows as Appendix A shows them, by claim id under readable headers
    (:data:`CLAIM_HEADERS`)."""
    return frame.set_index("id")[list(CLAIM_HEADERS)].rename(columns=CLAIM_HEADERS).rename_axis("claim")


__all__ = ["CLAIMS", "COMPARISON_STATUSES", "GROUP_HEADERS", "PAPER_COLUMNS", "QUOTES", "Published", "Quote",
           "SourceClaim", "claims_for_page", "claims_summary", "column_item", "compare", "comparison_for_page",
           "comparison_summary", "group_comparison", "operand", "published", "published_table", "recheck_claims"]
