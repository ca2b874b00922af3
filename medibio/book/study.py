"""The Table 5 study's pilot (issue 40): the pretrained arms fine-tuned on three BLURB sets, and the go/no-go.

The pilot pretrains #3 (scratch, abstracts) and #4 (scratch, full text) on 5M tokens each
(:mod:`medibio.pretrain.study`, in units) and fine-tunes them beside #0 (random initialisation) on
BC5-chem, NCBI-disease and ChemProt under the ``cpu-study`` profile; the study goes on only if #3 beats #0
by ``GO_MARGIN`` F1 points on the mean over the three sets (:func:`medibio.pretrain.study.pilot_gate`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from medibio.core.errors import MedibioError
from medibio.core.settings import Settings
from medibio.finetune.runner import run_finetune
from medibio.pretrain import study
from medibio.pretrain.configs import PretrainConfig
from medibio.pretrain.trainer import model_reference
from medibio.runs.records import RunRecord

PILOT_TASKS = ("BC5-chem", "NCBI-disease", "ChemProt")
PILOT_ARMS = ("0", "3", "4")


def variant(arm: str, tokens: int) -> str:
    """The fine-tuning runs' variant of an arm: ``study-3`` at the study's budget, ``study-3-5M`` at another
    (the pilot's). Every pretraining seed of an arm shares it; the model (``study-3-s1``) tells them apart."""
    name = f"study-{study.get_arm(arm).id}"
    if tokens == study.TOKENS:
        return name
    return f"{name}-{tokens // 1_000_000}M" if tokens % 1_000_000 == 0 else f"{name}-{tokens}tokens"


def finetune_arms(settings: Settings, arms: Sequence[str] = PILOT_ARMS, tasks: Sequence[str] = PILOT_TASKS,
                  tokens: int = study.PILOT_TOKENS, pretrain_seeds: Sequence[int] = (1,),
                  seeds: Sequence[int] | None = None, profile: str = "cpu-study",
                  config: PretrainConfig | str = study.CONFIG) -> dict[str, list[RunRecord]]:
    """Fine-tune every arm's finished pretrained models on ``tasks`` with ``seeds`` (None: the profile's) and
    return the records by arm. The runs start from ``pretrain-run:`` names, so they are planned from the
    pretraining runs' identities and found without their weights. A pretraining run not finished stops it,
    naming the command that goes on with it."""
    records: dict[str, list[RunRecord]] = {}
    for arm_id in arms:
        arm = study.get_arm(arm_id)
        for pretrain_seed in pretrain_seeds:
            pretrained = study.finished(arm, pretrain_seed, tokens, settings, config)
            if pretrained is None:
                done = study.steps_done(arm, pretrain_seed, tokens, settings, config)
                total = study.arm_config(arm, pretrain_seed, tokens, config).max_steps
                raise MedibioError(f"arm #{arm.id} (pretraining seed {pretrain_seed}) has {done} of {total} steps; "
                                   f"`medibio study unit --arm {arm.id} --seed {pretrain_seed} --tokens {tokens}` "
                                   "goes on with it")
            records.setdefault(arm.id, []).extend(
                run_finetune(list(tasks), model=model_reference(pretrained), seeds=seeds, profile=profile,
                             variant=variant(arm.id, tokens), settings=settings))
    return records


def pilot(settings: Settings, **options: Any) -> dict[str, Any]:
    """Fine-tune the pilot's arms (:func:`finetune_arms`) and judge the gate on their test scores."""
    records = finetune_arms(settings, **options)
    scores = {arm: {} for arm in records}
    for arm, runs in records.items():
        for run in runs:
            if not run.ok or run.score_test is None:
                raise MedibioError(f"pilot arm {arm}: {run.run_id} has no test score ({run.status}: "
                                   f"{run.reason or 'no reason recorded'}); the gate needs every run")
            scores[arm].setdefault(run.dataset, []).append(float(run.score_test))
    return {"scores": scores, **study.pilot_gate(scores)}
