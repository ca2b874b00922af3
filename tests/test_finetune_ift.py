"""Intermediate fine-tuning: the encoder (not the head) travels from the intermediate task to the target."""

from __future__ import annotations

import pytest
import torch
from safetensors.torch import load_file

from medibio.finetune import runner
from medibio.ift import stages as ift
from medibio.models import heads as modeling
from medibio.runs import records as rec
from medibio.tasks import registry

pytestmark = pytest.mark.realdata


def _encoder_state(model) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in modeling.encoder(model).state_dict().items()}


def _head_state(model) -> dict[str, torch.Tensor]:
    names = set(modeling.head_parameter_names(model))
    return {n: p.detach().clone() for n, p in model.named_parameters() if n in names}


@pytest.fixture()
def spies(monkeypatch):
    built: list[dict] = []
    saved: list[dict] = []
    real_build, real_save = modeling.build_model, modeling.save_encoder

    def build(spec, name, dropout=0.1, init_from=None, seed=None, **options):
        model = real_build(spec, name, dropout, init_from=init_from, seed=seed, **options)
        built.append({"task": spec.name, "init_from": init_from, "encoder": _encoder_state(model),
                      "head": _head_state(model)})
        return model

    def save(model, tokenizer, out_dir):
        saved.append({"encoder": _encoder_state(model), "head": _head_state(model), "dir": out_dir})
        return real_save(model, tokenizer, out_dir)

    monkeypatch.setattr(modeling, "build_model", build)
    monkeypatch.setattr(modeling, "save_encoder", save)
    return built, saved


def _stage(settings, chain, overrides=None, seed=1):
    """The record of a chain's last stage, as the runner plans it (the digest covers the stages' configs)."""
    job = runner.plan_run("BIOSSES", profile="smoke", intermediate=chain, overrides=overrides,
                          settings=settings).job
    plan = ift.plan_stage(job.model, job.stages, job.model_hash, seed, job.profile, job.model, "BIOSSES",
                          overrides)
    record = rec.find_record(settings.results_root, plan.key)
    assert record is not None, f"no stage record for {chain} seed {seed}"
    return record


def _encoder(settings, chain, overrides=None, seed=1):
    """The encoder folder a chain's last stage published with its record."""
    return _stage(settings, chain, overrides, seed).artifact("encoder", settings.results_root)


def _same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_encoder_is_carried_and_head_is_fresh(settings, data_root, spies):
    built, saved = spies
    [record] = runner.run_finetune("BIOSSES", profile="smoke", intermediate="STS-B", settings=settings)
    assert [b["task"] for b in built] == ["STS-B", "BIOSSES"]
    base_encoder = built[0]["encoder"]  # STS-B model straight from the base checkpoint
    intermediate, target = saved[0], built[1]
    assert target["init_from"] is not None
    # the target starts from the intermediate's (trained) encoder, which differs from the base model's
    assert _same(target["encoder"], intermediate["encoder"])
    assert not _same(target["encoder"], base_encoder)
    # STS-B and BIOSSES are both regression: same head shapes, yet the head is new, not STS-B's
    assert intermediate["head"].keys() == target["head"].keys()
    assert all(not torch.equal(intermediate["head"][k], target["head"][k]) for k in target["head"])
    # the saved stage holds encoder weights only
    stage = _stage(settings, ["STS-B"])
    keys = load_file(str(stage.artifact("encoder", settings.results_root) / "model.safetensors")).keys()
    assert keys and not any("classifier" in k or k.startswith("pooler.") for k in keys)
    assert stage.kind == "ift-stage" and stage.dataset == "STS-B" and stage.dev_curve
    assert record.variant == "ift-STS-B" and record.intermediate == ["STS-B"]
    assert any("intermediate" in n for n in record.notes)


def test_chains_reuse_finished_stages(settings, data_root, spies):
    built, _ = spies
    runner.run_finetune("BIOSSES", profile="smoke", intermediate="STS-B", settings=settings)
    built.clear()
    [record] = runner.run_finetune("GAD", profile="smoke", intermediate=["STS-B", "SICK"], settings=settings)
    # STS-B stage reused; SICK trained from the STS-B encoder; then GAD from the SICK encoder
    assert [b["task"] for b in built] == ["SICK-R", "GAD"]
    sts_dir = _encoder(settings, ["STS-B"])
    chain_dir = _encoder(settings, ["STS-B", "SICK-R"])
    assert str(built[0]["init_from"]) == str(sts_dir) and str(built[1]["init_from"]) == str(chain_dir)
    assert record.variant == "ift-STS-B+SICK-R" and record.intermediate == ["STS-B", "SICK-R"]


def test_blurb_dataset_as_intermediate_and_names():
    assert ift.parse_chain("STS-B, sick") == ["STS-B", "SICK-R"]
    assert ift.parse_chain(["chemprot"]) == ["ChemProt"]
    assert ift.parse_chain(None) == []
    from medibio.training import config

    assert config.trainable_task("BIOSSES") is registry.get("BIOSSES")
    # an unknown name is neither an intermediate task nor a BLURB dataset: the message lists those (only)
    with pytest.raises(KeyError, match=r"unknown task 'MNLI-not-here'.*\(BLURB datasets and intermediate tasks\)"
                       ) as info:
        ift.parse_chain("MNLI-not-here")
    assert "STS-B" in str(info.value) and "BIOSSES" in str(info.value) and "SciERC" not in str(info.value)


def test_stage_does_not_depend_on_earlier_random_draws(settings, tmp_path, data_root, spies):
    """The same stage (task, seed) gives the same head and the same training, whatever ran before it in the
    process (a book chapter runs many things before its first IFT stage)."""
    built, _ = spies
    losses = []
    for run, draws in enumerate((0, 1000)):
        torch.rand(draws)  # move the global RNG like earlier work in a notebook kernel would
        here = settings.replace(results_root=tmp_path / str(run))
        runner.run_finetune("BIOSSES", profile="smoke", intermediate="STS-B", settings=here)
        losses.append(_stage(here, ["STS-B"]).dev_curve[0]["train_loss"])
    sts = [b for b in built if b["task"] == "STS-B"]
    assert len(sts) == 2 and _same(sts[0]["head"], sts[1]["head"])
    assert losses[0] == losses[1]


def test_an_overridden_intermediate_budget_trains_the_stage(settings, data_root, spies):
    """``intermediate_epochs``/``intermediate_max_train_examples`` from ``--config`` or overrides train the
    stage with that budget, into a folder of its own: the preset's stage is not reused under their name."""
    built, _ = spies
    runner.run_finetune("BIOSSES", profile="smoke", intermediate="STS-B", settings=settings)
    built.clear()
    budget = {"intermediate_epochs": 2, "intermediate_max_train_examples": 16}
    [record] = runner.run_finetune("BIOSSES", profile="smoke", intermediate="STS-B", config_overrides=budget,
                                   settings=settings)
    assert [b["task"] for b in built] == ["STS-B", "BIOSSES"]  # the preset's stage was not taken for it
    stage = _stage(settings, ["STS-B"], budget)
    folder = stage.artifact("encoder", settings.results_root)
    assert folder != _encoder(settings, ["STS-B"])
    assert stage.path(settings.results_root) != _stage(settings, ["STS-B"]).path(settings.results_root)
    assert stage.train_examples == 16 and [e["epoch"] for e in stage.dev_curve] == [1, 2]
    assert stage.hyperparameters == record.config["intermediate"][0]["hyperparameters"]
    assert str(built[1]["init_from"]) == str(folder)


def test_a_cosine_target_trains_its_regression_stages_with_the_cosine_head(settings, data_root, spies):
    """A bi-encoder target (``pooling: cosine``) gets stages in the same geometry where the stage is a
    sentence-pair regression (STS-B); a classification stage (SICK-E) keeps its own head."""
    built, _ = spies
    overrides = {"pooling": "cosine", "head_lr_scale": 10.0}
    [record] = runner.run_finetune("BIOSSES", profile="smoke", intermediate=["STS-B", "SICK-E"],
                                   config_overrides=overrides, settings=settings)
    assert record.ok and record.hyperparameters["pooling"] == "cosine"
    stages = record.config["intermediate"]
    assert [s["task"] for s in stages] == ["STS-B", "SICK-E"]
    assert stages[0]["hyperparameters"]["pooling"] == "cosine" and stages[0]["hyperparameters"]["head_lr_scale"] == 10.0
    assert "pooling" not in stages[1]["hyperparameters"]  # the default head, left out of the digest
    assert [b["task"] for b in built] == ["STS-B", "SICK-E", "BIOSSES"]
    assert [sorted(b["head"]) for b in built][0] == ["scale", "shift"] == sorted(built[2]["head"])


def test_an_intermediate_seed_trains_each_stage_once_for_all_target_seeds(settings, data_root, spies):
    """``intermediate_seed`` (the cpu profile sets 1): one intermediate model per chain, every target seed
    fine-tuned from it; without it each target seed trains its own stage."""
    built, _ = spies
    shared = {"intermediate_seed": 1}
    records = runner.run_finetune("BIOSSES", profile="smoke", seeds=[1, 2], intermediate="STS-B",
                                  config_overrides=shared, settings=settings)
    assert [b["task"] for b in built] == ["STS-B", "BIOSSES", "BIOSSES"]
    stage = _encoder(settings, ["STS-B"])
    assert [str(b["init_from"]) for b in built[1:]] == [str(stage)] * 2
    assert [r.seed for r in records] == [1, 2]
    assert all(r.hyperparameters["intermediate_seed"] == 1 for r in records)
    assert records[0].config_digest != runner.plan_run("BIOSSES", profile="smoke", intermediate="STS-B",
                                                       settings=settings).key.config_digest
    built.clear()
    runner.run_finetune("BIOSSES", profile="smoke", seeds=[1, 2], intermediate="STS-B", settings=settings)
    assert [b["task"] for b in built] == ["BIOSSES", "STS-B", "BIOSSES"]  # seed 1's stage is reused, seed 2 trains its own
    assert str(built[2]["init_from"]).endswith("seed2/encoder")


def test_an_intermediate_seed_leaves_runs_without_a_chain_alone(settings, data_root):
    """A run with no intermediate stage keeps its identity whatever ``intermediate_seed`` says."""
    plain = runner.plan_run("BIOSSES", profile="smoke", settings=settings)
    seeded = runner.plan_run("BIOSSES", profile="smoke", overrides={"intermediate_seed": 1}, settings=settings)
    assert seeded.key.config_digest == plain.key.config_digest
    assert "intermediate_seed" not in seeded.payload["hyperparameters"]


def test_an_intermediate_stage_finds_a_pretraining_runs_model_under_the_results_root(tmp_path, monkeypatch) -> None:
    """A chain that starts from one of our pretraining runs (``pretrain-run:``, the CPU study's models) loads its
    weights from the results root it was trained under, as a direct fine-tuning run does; its plan names the run,
    so a recorded stage is planned again where the weights are not (reference/)."""
    from pathlib import Path
    from types import SimpleNamespace

    from medibio.core.errors import ModelUnavailableError
    from medibio.core.settings import Settings
    from medibio.ift import stages
    from medibio.models import zoo

    key = "study/scratch/study-3/biomed-abstracts/0123456789ab/seed1"
    (tmp_path / "pretrain" / key / "model").mkdir(parents=True)
    settings = Settings(results_root=tmp_path, cache_root=tmp_path / "cache")
    starts: list[str] = []
    monkeypatch.setattr(stages, "plan_stage",
                        lambda model, configs, model_hash, seed, profile, source, *a: starts.append(source))
    record = SimpleNamespace(artifact=lambda name, root: Path(root) / "encoder")
    monkeypatch.setattr(stages.protocol, "run", lambda *a, **k: (record, None))
    ctx = SimpleNamespace(settings=settings, accelerator=None, threads=1)
    found = stages.prepare_encoder(zoo.run_reference(key), [{}], "h", 1, None, "BIOSSES", None, ctx)
    assert starts == [zoo.run_reference(key)] and found == tmp_path / "encoder"
    job = stages.Job(None, starts[0], 1, None, ("STS-B",), None, zoo.run_reference(key))
    assert job.start(settings) == str(tmp_path / "pretrain" / key / "model")
    with pytest.raises(ModelUnavailableError, match="holds neither its record nor its weights"):
        job.start(Settings(results_root=tmp_path / "elsewhere", cache_root=tmp_path / "cache"))
