"""The five pretraining configurations of paper Table 5 as experiments at small scale, chained and resumable.

Paper (Table 5; corpus = medicine-related S2ORC subset): #1 continual from SciDeBERTa v2 on abstracts
(90K steps, BLURB 78.03); #2 continual from DeBERTa-v3 base on abstracts (100K, 76.65); #3 from scratch on
abstracts (125K, 77.38); #4 from scratch on full text (125K, 76.46); #5 #4 continued on abstracts (50K, 76.38).

Here: SciDeBERTa v2 is replaced by a "science" model trained from scratch on the local computer-science
text (SciTLDR, ScisummNet, unarXive), DeBERTa-v3 by MiniLM (the general-domain model available offline),
and S2ORC by SumPubMed abstracts / full texts. Each experiment's steps are the profile's ``max_steps`` scaled by
the paper's steps / 125K, so the relative training lengths match the paper.
"""

from __future__ import annotations

from dataclasses import dataclass

from medibio.core.errors import UnknownNameError
from medibio.core.settings import Settings
from medibio.pretrain.configs import PretrainConfig, get_config
from medibio.pretrain.plan import effective_config
from medibio.pretrain.trainer import model_folder, run_pretraining
from medibio.runs import records as rec

REFERENCE_STEPS = 125_000  # the longest Table 5 run; a profile's max_steps stands for it


@dataclass(frozen=True)
class Experiment:
    """One pretraining experiment; ``base`` is None (from scratch), another experiment's id or a model name."""

    id: str
    algorithm: str
    paper_base: str
    base: str | None
    corpus: str
    variant: str
    paper_steps: int | None
    paper_blurb: float | None
    description: str

    @property
    def step_fraction(self) -> float:
        return 1.0 if self.paper_steps is None else self.paper_steps / REFERENCE_STEPS

    def steps(self, config: PretrainConfig) -> int:
        """Training steps of this experiment under a profile."""
        return max(1, round(config.max_steps * self.step_fraction))


EXPERIMENTS: dict[str, Experiment] = {e.id: e for e in (
    Experiment("science", "from scratch", "DeBERTa-v2 (SciDeBERTa v2 stand-in)", None, "cs", "fulltext", None,
               None, "general-science model: from scratch on CS abstracts and full texts"),
    Experiment("table5-1", "continual learning", "SciDeBERTa v2", "science", "biomed-abstracts", "abstract",
               90_000, 78.03, "#1: the science model continued on biomedical abstracts"),
    Experiment("table5-2", "continual learning", "DeBERTa-v3 base", "minilm", "biomed-abstracts", "abstract",
               100_000, 76.65, "#2: general-domain MiniLM continued on biomedical abstracts"),
    Experiment("table5-3", "from scratch", "DeBERTa-v2", None, "biomed-abstracts", "abstract", 125_000, 77.38,
               "#3: from scratch on biomedical abstracts"),
    Experiment("table5-4", "from scratch", "DeBERTa-v2", None, "biomed-fulltext", "fulltext", 125_000, 76.46,
               "#4: from scratch on biomedical full text"),
    Experiment("table5-5", "continual learning", "#4", "table5-4", "biomed-abstracts", "abstract", 50_000,
               76.38, "#5: #4 continued on biomedical abstracts"),
)}
TABLE5 = tuple(f"table5-{i}" for i in range(1, 6))


def resolve_ids(selection: str | list[str] | tuple[str, ...]) -> list[str]:
    """Requested experiments plus the ones they build on, in a runnable order ("all" = the five)."""
    items = [selection] if isinstance(selection, str) else list(selection)
    wanted: list[str] = []
    for item in items:
        for part in (p.strip() for p in item.split(",") if p.strip()):
            if part == "all":
                wanted.extend(TABLE5)
            elif part.isdigit() and f"table5-{part}" in EXPERIMENTS:
                wanted.append(f"table5-{part}")
            elif part in EXPERIMENTS:
                wanted.append(part)
            else:
                raise UnknownNameError("experiment", part, ["all", *EXPERIMENTS], " (or a Table 5 row number)")
    ordered: list[str] = []

    def add(eid: str) -> None:
        base = EXPERIMENTS[eid].base
        if base in EXPERIMENTS:
            add(base)
        if eid not in ordered:
            ordered.append(eid)

    for eid in wanted:
        add(eid)
    return ordered


def table5(config: PretrainConfig | str = "mini"):
    """Table 5 with the small-scale experiments next to the paper's columns (for the book)."""
    import pandas as pd

    cfg = get_config(config) if isinstance(config, str) else config
    rows = []
    for e in EXPERIMENTS.values():
        rows.append({"experiment": e.id, "algorithm": e.algorithm, "paper base model": e.paper_base,
                     "paper corpus": e.variant if e.id != "science" else "S2ORC (all fields)",
                     "paper steps": e.paper_steps, "paper BLURB avg": e.paper_blurb,
                     "here: base": e.base or "random init", "here: corpus": e.corpus,
                     f"here: steps ({cfg.name})": e.steps(cfg)})
    frame = pd.DataFrame(rows).set_index("experiment")
    frame["paper steps"] = frame["paper steps"].astype("Int64")
    return frame


def run_experiments(config: PretrainConfig | str = "mini", selection: str | list[str] = "all",
                    max_steps: int | None = None, effective_batch: int | None = None, progress: bool = True,
                    settings: Settings | None = None) -> dict[str, rec.RunRecord]:
    """Run the selected experiments (and the ones they build on) in order; return ``{experiment id: record}``.

    Each experiment is a pretraining run (tagged with the experiment's id) whose identity covers its
    configuration, steps, corpus files and the fingerprint of the model it continues from: a finished
    experiment of the same configuration is reused, an interrupted one resumes from its newest checkpoint, and
    a changed one — or one whose base experiment changed — trains into a record of its own."""
    settings = settings or Settings()
    cfg = effective_config(config, max_steps, effective_batch, limit=settings.limit)
    records: dict[str, rec.RunRecord] = {}
    for eid in resolve_ids(selection):
        exp = EXPERIMENTS[eid]
        init = str(model_folder(records[exp.base], settings)) if exp.base in EXPERIMENTS else exp.base
        records[eid] = run_pretraining(cfg.with_overrides(max_steps=exp.steps(cfg)), corpus=exp.corpus,
                                       variant=exp.variant, init=init, tag=eid, progress=progress,
                                       notes=[exp.description], settings=settings)
    return records
