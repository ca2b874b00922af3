"""Intermediate fine-tuning: the encoder (not the head) travels from the intermediate task to the target."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import load_file

from medibio.blurb import registry
from medibio.finetune import modeling, runner
from medibio.ift import chain as ift

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


def _stage(root, chain, data_root):
    """The stage folder of a chain prefix, as the runner plans it (the digest covers the stages' configs)."""
    plan = runner.plan_run("BIOSSES", profile="smoke", intermediate=chain, data_root=data_root)
    return ift.stage_dir(root, "smoke", "tiny-deberta", chain, ift.stage_digest(plan.model_hash, plan.stages), 1)


def _same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_encoder_is_carried_and_head_is_fresh(tmp_path, data_root, spies):
    built, saved = spies
    [record] = runner.run_finetune("BIOSSES", profile="smoke", intermediate="STS-B", results_root=tmp_path,
                                   data_root=data_root)
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
    folder = _stage(tmp_path, ["STS-B"], data_root)
    keys = load_file(str(folder / "encoder" / "model.safetensors")).keys()
    assert keys and not any("classifier" in k or k.startswith("pooler.") for k in keys)
    stage = json.loads((folder / "stage.json").read_text())
    assert stage["task"] == "STS-B" and stage["dev_curve"]
    assert record.variant == "ift-STS-B" and record.intermediate == ["STS-B"]
    assert any("intermediate" in n for n in record.notes)


def test_chains_reuse_finished_stages(tmp_path, data_root, spies):
    built, _ = spies
    runner.run_finetune("BIOSSES", profile="smoke", intermediate="STS-B", results_root=tmp_path, data_root=data_root)
    built.clear()
    [record] = runner.run_finetune("GAD", profile="smoke", intermediate=["STS-B", "SICK"], results_root=tmp_path,
                                   data_root=data_root)
    # STS-B stage reused; SICK trained from the STS-B encoder; then GAD from the SICK encoder
    assert [b["task"] for b in built] == ["SICK-R", "GAD"]
    sts_dir = _stage(tmp_path, ["STS-B"], data_root) / "encoder"
    chain_dir = _stage(tmp_path, ["STS-B", "SICK-R"], data_root) / "encoder"
    assert str(built[0]["init_from"]) == str(sts_dir) and str(built[1]["init_from"]) == str(chain_dir)
    assert record.variant == "ift-STS-B+SICK-R" and record.intermediate == ["STS-B", "SICK-R"]


def test_blurb_dataset_as_intermediate_and_names():
    assert ift.parse_chain("STS-B, sick") == ["STS-B", "SICK-R"]
    assert ift.parse_chain(["chemprot"]) == ["ChemProt"]
    assert ift.parse_chain(None) == []
    from medibio.ift import tasks

    assert tasks.get_task("BIOSSES") is registry.get("BIOSSES")
    with pytest.raises(KeyError, match="neither an intermediate task"):
        ift.parse_chain("MNLI-not-here")


def test_stage_does_not_depend_on_earlier_random_draws(tmp_path, data_root, spies):
    """The same stage (task, seed) gives the same head and the same training, whatever ran before it in the
    process (a book chapter runs many things before its first IFT stage)."""
    built, _ = spies
    losses = []
    for run, draws in enumerate((0, 1000)):
        torch.rand(draws)  # move the global RNG like earlier work in a notebook kernel would
        runner.run_finetune("BIOSSES", profile="smoke", intermediate="STS-B", results_root=tmp_path / str(run),
                            data_root=data_root)
        stage = _stage(tmp_path / str(run), ["STS-B"], data_root) / "stage.json"
        losses.append(json.loads(stage.read_text(encoding="utf-8"))["dev_curve"][0]["train_loss"])
    sts = [b for b in built if b["task"] == "STS-B"]
    assert len(sts) == 2 and _same(sts[0]["head"], sts[1]["head"])
    assert losses[0] == losses[1]


def test_an_overridden_intermediate_budget_trains_the_stage(tmp_path, data_root, spies):
    """``intermediate_epochs``/``intermediate_max_train_examples`` from ``--config`` or overrides train the
    stage with that budget, into a folder of its own: the preset's stage is not reused under their name."""
    built, _ = spies
    runner.run_finetune("BIOSSES", profile="smoke", intermediate="STS-B", results_root=tmp_path, data_root=data_root)
    built.clear()
    budget = {"intermediate_epochs": 2, "intermediate_max_train_examples": 16}
    [record] = runner.run_finetune("BIOSSES", profile="smoke", intermediate="STS-B", config_overrides=budget,
                                   results_root=tmp_path, data_root=data_root)
    assert [b["task"] for b in built] == ["STS-B", "BIOSSES"]  # the preset's stage was not taken for it
    plan = runner.plan_run("BIOSSES", profile="smoke", intermediate="STS-B", overrides=budget, data_root=data_root)
    folder = ift.stage_dir(tmp_path, "smoke", "tiny-deberta", ["STS-B"],
                           ift.stage_digest(plan.model_hash, plan.stages), 1)
    assert folder != _stage(tmp_path, ["STS-B"], data_root)
    stage = json.loads((folder / "stage.json").read_text(encoding="utf-8"))
    assert stage["train_examples"] == 16 and [e["epoch"] for e in stage["dev_curve"]] == [1, 2]
    assert stage["hyperparameters"] == record.config["intermediate"][0]["hyperparameters"]
    assert str(built[1]["init_from"]) == str(folder / "encoder")


def test_a_cosine_target_trains_its_regression_stages_with_the_cosine_head(tmp_path, data_root, spies):
    """A bi-encoder target (``pooling: cosine``) gets stages in the same geometry where the stage is a
    sentence-pair regression (STS-B); a classification stage (SICK-E) keeps its own head."""
    built, _ = spies
    overrides = {"pooling": "cosine", "head_lr_scale": 10.0}
    [record] = runner.run_finetune("BIOSSES", profile="smoke", intermediate=["STS-B", "SICK-E"],
                                   config_overrides=overrides, results_root=tmp_path, data_root=data_root)
    assert record.ok and record.hyperparameters["pooling"] == "cosine"
    stages = record.config["intermediate"]
    assert [s["task"] for s in stages] == ["STS-B", "SICK-E"]
    assert stages[0]["hyperparameters"]["pooling"] == "cosine" and stages[0]["hyperparameters"]["head_lr_scale"] == 10.0
    assert "pooling" not in stages[1]["hyperparameters"]  # the default head, left out of the digest
    assert [b["task"] for b in built] == ["STS-B", "SICK-E", "BIOSSES"]
    assert [sorted(b["head"]) for b in built][0] == ["scale", "shift"] == sorted(built[2]["head"])


def test_an_intermediate_seed_trains_each_stage_once_for_all_target_seeds(tmp_path, data_root, spies):
    """``intermediate_seed`` (the cpu profile sets 1): one intermediate model per chain, every target seed
    fine-tuned from it; without it each target seed trains its own stage."""
    built, _ = spies
    shared = {"intermediate_seed": 1}
    records = runner.run_finetune("BIOSSES", profile="smoke", seeds=[1, 2], intermediate="STS-B",
                                  config_overrides=shared, results_root=tmp_path, data_root=data_root)
    assert [b["task"] for b in built] == ["STS-B", "BIOSSES", "BIOSSES"]
    stage = _stage(tmp_path, ["STS-B"], data_root) / "encoder"
    assert [str(b["init_from"]) for b in built[1:]] == [str(stage)] * 2
    assert [r.seed for r in records] == [1, 2]
    assert all(r.hyperparameters["intermediate_seed"] == 1 for r in records)
    assert records[0].config_digest != runner.plan_run("BIOSSES", profile="smoke", intermediate="STS-B",
                                                       data_root=data_root).key.config_digest
    built.clear()
    runner.run_finetune("BIOSSES", profile="smoke", seeds=[1, 2], intermediate="STS-B", results_root=tmp_path,
                        data_root=data_root)
    assert [b["task"] for b in built] == ["BIOSSES", "STS-B", "BIOSSES"]  # seed 1's stage is reused, seed 2 trains its own
    assert str(built[2]["init_from"]).endswith("seed2/encoder")


def test_an_intermediate_seed_leaves_runs_without_a_chain_alone(data_root):
    """A run with no intermediate stage keeps its identity whatever ``intermediate_seed`` says."""
    plain = runner.plan_run("BIOSSES", profile="smoke", data_root=data_root)
    seeded = runner.plan_run("BIOSSES", profile="smoke", overrides={"intermediate_seed": 1}, data_root=data_root)
    assert seeded.key.config_digest == plain.key.config_digest
    assert "intermediate_seed" not in seeded.payload["hyperparameters"]
