"""Table 4 (SciERC): what its printed numbers say (:func:`paper_gains`) and the published end-to-end SciERC
test results that the chapter puts beside ours, each with its source.

Only numbers that can be read at the cited place are here, as printed there (the two repositories print
fractions of 1: stored ×100, to four decimals). The span-model systems all publish SciERC results with SciBERT (BERT-base size,
110M parameters); their BERT-base and ALBERT models are for ACE only ("We use `bert-base-uncased` and
`albert-xxlarge-v1` for ACE04/ACE05 and use `allenai/scibert_scivocab_uncased` for SciERC", PURE's README).
No end-to-end SciERC result with an encoder smaller than BERT-base was found in the material searched for
this chapter (the PURE, PL-Marker and DyGIE++ repositories and issue threads, pages about the SpERT, SciBERT
and PURE papers); the papers' own tables were not readable there, so their numbers are not quoted.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import pandas as pd

from medibio.paper.audit import RUNS_TABLE4
from medibio.tasks import student

PURE_README = "https://github.com/princeton-nlp/PURE/blob/main/README.md#pre-trained-models-for-scierc"
DYGIEPP_README = "https://github.com/dwadden/dygiepp/blob/master/README.md#performance-of-downloaded-models"


@dataclass(frozen=True)
class Published:
    """One published result: test F1 (None where the source gives none) and where it is printed."""

    system: str
    encoder: str
    ner: float | None
    rel: float | None
    relplus: float | None
    coref: float | None
    source: str


RESULTS: tuple[Published, ...] = (
    Published("DyGIE++ released SciERC model (Wadden et al., 2019)", "SciBERT (110M)", 68.5529, 48.6778, None, None,
              DYGIEPP_README),
    Published("PURE released models, single sentence (Zhong & Chen, 2021)", "SciBERT (110M)", 66.6865, 48.6515, 35.6846,
              None, PURE_README),
    Published("PURE released models, cross-sentence (Zhong & Chen, 2021)", "SciBERT (110M)", 69.4573, 51.5017, 37.7154,
              None, PURE_README),
)


def frame() -> pd.DataFrame:
    """The published results, one row per system (columns NER, REL, REL+, Coref, encoder, source)."""
    scores = {"ner": "NER", "rel": "REL", "relplus": "REL+", "coref": "Coref"}
    out = pd.DataFrame([asdict(r) for r in RESULTS]).set_index("system").rename(columns=scores)
    out[list(scores.values())] = out[list(scores.values())].astype(float)
    return out[["encoder", *scores.values(), "source"]]


def paper_gains(table4: pd.DataFrame) -> pd.DataFrame:
    """Table 4's SciDeBERTa v2 − SciDeBERTa difference per task, in units of each model's std, and Welch's
    t-test from the printed mean ± std (five runs each, ± read as the sample std)."""
    mean = table4.pivot(index="task", columns="model", values="mean")
    sd = table4.pivot(index="task", columns="model", values="std")
    rows = []
    for task in ("NER", "JRE", "Coref"):
        v1, v2 = "SciDeBERTa", "SciDeBERTa v2"
        test = student.welch_from_stats(mean.loc[task, v2], sd.loc[task, v2], RUNS_TABLE4,
                                        mean.loc[task, v1], sd.loc[task, v1], RUNS_TABLE4)
        diff = mean.loc[task, v2] - mean.loc[task, v1]
        rows.append({"task": task, "v2 − v1": diff, "in sd of SciDeBERTa": diff / sd.loc[task, v1],
                     "in sd of v2": diff / sd.loc[task, v2], "Welch t": test.statistic, "p": test.pvalue})
    return pd.DataFrame(rows).set_index("task")
