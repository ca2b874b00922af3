"""The five pretraining configurations of paper Table 5, staged at small scale, chained and resumable.

Paper (Table 5; corpus = medicine-related S2ORC subset): #1 continual from SciDeBERTa v2 on abstracts
(90K steps, BLURB 78.03); #2 continual from DeBERTa-v3 base on abstracts (100K, 76.65); #3 from scratch on
abstracts (125K, 77.38); #4 from scratch on full text (125K, 76.46); #5 #4 continued on abstracts (50K, 76.38).

Here: SciDeBERTa v2 is replaced by a "science" model trained from scratch on the local computer-science
text (SciTLDR, ScisummNet, unarXive), DeBERTa-v3 by MiniLM (the general-domain model available offline),
and S2ORC by SumPubMed abstracts / full texts. Each stage's steps are the profile's ``max_steps`` scaled by
the paper's steps / 125K, so the relative training lengths match the paper.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from medibio.atomic import write_json
from medibio.errors import UnknownNameError
from medibio.paths import results_root
from medibio.pretrain.configs import PretrainConfig, get_config

REFERENCE_STEPS = 125_000  # the longest Table 5 run; a profile's max_steps stands for it


@dataclass(frozen=True)
class Experiment:
    """One pretraining stage; ``base`` is None (from scratch), another stage's id or a model name."""

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
        """Training steps of this stage under a profile."""
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
    """Requested stages plus the stages they build on, in a runnable order ("all" = the five)."""
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
    """Table 5 with the small-scale staging next to the paper's columns (for the book)."""
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
                    out_root: str | Path | None = None, max_steps: int | None = None,
                    effective_batch: int | None = None, data_root: str | Path | None = None,
                    progress: bool = True) -> dict[str, Any]:
    """Run the selected stages (and their prerequisites) in order and return the manifest.

    Each stage lives in ``<out_root>/<stage>/<digest>/``, the digest that of its effective configuration
    (:mod:`medibio.pretrain.plan`: config, steps, corpus files, and the fingerprint of the stage it continues
    from): a finished stage of the same configuration is reused, an interrupted one resumes from its newest
    checkpoint, and a changed one — or one whose base stage changed — trains into a new folder.
    ``out_root/experiments.json`` records each stage's status, digest, output checkpoint and run record."""
    from medibio.pretrain.plan import effective_config, plan_pretraining
    from medibio.pretrain.trainer import complete_record, run_pretraining

    cfg = effective_config(config, max_steps, effective_batch)
    root = Path(out_root) if out_root else results_root() / "pretrain" / cfg.name / "experiments"
    manifest_path = root / "experiments.json"
    manifest: dict[str, Any] = {"config": cfg.name, "max_steps": cfg.max_steps, "stages": {}}
    ids = resolve_ids(selection)
    for eid in ids:
        exp = EXPERIMENTS[eid]
        init = manifest["stages"][exp.base]["output"] if exp.base in EXPERIMENTS else exp.base
        stage_cfg = cfg.with_overrides(max_steps=exp.steps(cfg))
        plan = plan_pretraining(stage_cfg, exp.corpus, exp.variant, init, data_root=data_root, tag=eid)
        out = root / eid / plan.digest
        entry = {**asdict(exp), "steps": exp.steps(cfg), "config_digest": plan.digest, "out_dir": str(out),
                 "output": None, "status": "pending"}
        manifest["stages"][eid] = entry
        rec = complete_record(out, plan.digest)
        if rec is None:
            write_json(manifest_path, {**manifest, "running": eid})
            rec = run_pretraining(stage_cfg, corpus=exp.corpus, variant=exp.variant, init=init, out_dir=out,
                                  resume=True, data_root=data_root, tag=eid, progress=progress,
                                  notes=[exp.description])
        entry.update(status=rec["status"], output=rec.get("output"), record=str(out / "run.json"),
                     final_loss=rec.get("final_loss"), wall_time_s=rec.get("wall_time_s"))
        write_json(manifest_path, manifest)
    return manifest
