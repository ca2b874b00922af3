"""Reference scores from the BLURB paper (Gu et al., Table 6): nine encoders fine-tuned the same way.

Why: the book's small CPU runs use a general-domain model (MiniLM), so the fairest yardstick next to
MediBioDeBERTa's numbers is how a general-domain BERT fared on BLURB, and how far in-domain pretraining
(PubMedBERT) moved it. The CSV in ``medibio/paper/data`` holds the cells exactly as printed (test scores,
mean over 5 runs, 10 for BIOSSES/BioASQ/PubMedQA) including each model's printed BLURB score, which our
:func:`medibio.tasks.scoring.blurb_score` recomputes (a test holds both to 0.01).
"""

from __future__ import annotations

import csv
from functools import cache
from importlib import resources
from pathlib import Path

from medibio.core.errors import InputFormatError
from medibio.tasks import registry

SOURCE = ("Gu et al., Domain-Specific Language Model Pretraining for Biomedical NLP (ACM HEALTH 2021), "
          "Table 6")
PRINTED_SCORE = "BLURB score"
GENERAL_DOMAIN = "BERT uncased"
IN_DOMAIN = "PubMedBERT uncased"


def csv_path() -> Path:
    return Path(str(resources.files("medibio.paper.data").joinpath("blurb_gu2021_table6.csv")))


@cache
def _rows(path: Path | None = None) -> tuple[tuple[str, str, float], ...]:
    path = path or csv_path()
    rows = []
    with path.open(encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        if reader.fieldnames != ["model", "dataset", "value"]:
            raise InputFormatError(path, 1, "header model,dataset,value", ",".join(reader.fieldnames or []))
        for line, row in enumerate(reader, start=2):
            label = row["dataset"]
            if label != PRINTED_SCORE:
                try:
                    label = registry.get(label, "blurb").name
                except KeyError:
                    raise InputFormatError(path, line, "a BLURB dataset name or 'BLURB score'", label) from None
            try:
                value = float(row["value"])
            except (TypeError, ValueError):
                raise InputFormatError(path, line, "a number in column 'value'", repr(row["value"])) from None
            rows.append((row["model"], label, value))
    return tuple(rows)


def models(path: Path | None = None) -> list[str]:
    """The encoders of the table, in printed order."""
    return list(dict.fromkeys(m for m, _, _ in _rows(path)))


def scores(model: str, path: Path | None = None) -> dict[str, float]:
    """``{dataset: test score}`` of one encoder (canonical dataset names, all 13 datasets)."""
    out = {d: v for m, d, v in _rows(path) if m == model and d != PRINTED_SCORE}
    if not out:
        raise KeyError(f"no model {model!r} in {SOURCE}; known: {', '.join(models(path))}")
    return out


def printed_blurb_score(model: str, path: Path | None = None) -> float:
    """The BLURB score the paper prints for ``model``."""
    for m, d, v in _rows(path):
        if m == model and d == PRINTED_SCORE:
            return v
    raise KeyError(f"no printed BLURB score for {model!r} in {SOURCE}")


__all__ = ["GENERAL_DOMAIN", "IN_DOMAIN", "SOURCE", "models", "printed_blurb_score", "scores"]
