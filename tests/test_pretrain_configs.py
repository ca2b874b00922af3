"""Table 3 configs, the small profiles, the learning-rate schedule and the Table 5 staging."""

from __future__ import annotations

import os

import pytest

from medibio.book.table5 import table5
from medibio.experiments.table5 import SCALED_DOWN, configurations, resolve_ids, scaled_steps
from medibio.pretrain.configs import CONFIGS, get_config, lr_at, lr_schedule, table3


def test_table3_is_rendered_from_the_config_objects():
    frame = table3()
    assert list(frame.columns) == ["scideberta-v2", "medibiodeberta"]
    assert frame.loc["max training steps"].tolist() == ["500K", "10K"]
    assert frame.loc["warmup steps"].tolist() == ["50K", "1K"]
    assert frame.loc["batch size", "scideberta-v2"] == "8,192"
    assert frame.loc["batch size", "medibiodeberta"].startswith("49,152")
    assert frame.loc["learning rate"].tolist() == ["0.0001", "0.0005"]
    assert set(frame.loc["optimizer"]) == {"AdamW"}
    assert set(frame.loc["weight decay"]) == {"0.01"}
    assert set(frame.loc["learning rate decay"]) == {"linear"}


def test_paper_configs_hold_the_paper_values():
    sci, med = get_config("scideberta-v2"), get_config("medibiodeberta")
    assert (sci.max_steps, sci.warmup_steps, sci.effective_batch, sci.learning_rate) == (500_000, 50_000, 8_192, 1e-4)
    assert (med.max_steps, med.warmup_steps, med.effective_batch, med.learning_rate) == (10_000, 1_000, 49_152, 5e-4)
    assert med.warmup_steps / med.max_steps == pytest.approx(0.10)  # "10% of the total steps"
    assert sci.model.layers == 12 and sci.model.vocab_size == 128_000


def test_gpu_mini_is_sized_as_the_issue_asks():
    g = get_config("gpu-mini")
    assert 6 <= g.model.layers <= 12 and 256 <= g.model.hidden <= 512
    assert 16_000 <= g.model.vocab_size <= 32_000
    assert g.model.hidden % g.model.heads == 0


def test_unknown_config_lists_the_known_names():
    with pytest.raises(KeyError, match="mini"):
        get_config("nope")


def test_schedule_warms_up_linearly_then_decays_to_zero():
    cfg = get_config("medibiodeberta")
    assert lr_at(cfg, 0) == 0.0
    assert lr_at(cfg, 500) == pytest.approx(2.5e-4)
    assert lr_at(cfg, 1_000) == pytest.approx(5e-4)
    assert lr_at(cfg, 5_500) == pytest.approx(2.5e-4)
    assert lr_at(cfg, 10_000) == 0.0
    frame = lr_schedule(cfg)
    assert frame["learning_rate"].max() == pytest.approx(5e-4)
    assert frame.loc[frame["learning_rate"].idxmax(), "step"] == 1_000


def test_schedule_matches_the_transformers_scheduler_the_trainer_uses():
    import torch
    from transformers import get_linear_schedule_with_warmup

    cfg = get_config("mini")
    opt = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))], lr=cfg.learning_rate)
    sched = get_linear_schedule_with_warmup(opt, cfg.warmup_steps, cfg.max_steps)
    for step in range(cfg.max_steps):
        assert sched.get_last_lr()[0] == pytest.approx(lr_at(cfg, step))
        opt.step()
        sched.step()


def test_overriding_steps_keeps_the_warmup_share():
    cfg = get_config("gpu-mini").with_overrides(max_steps=1_000, effective_batch=None)
    assert cfg.warmup_steps == 100 and cfg.effective_batch == get_config("gpu-mini").effective_batch


def test_table5_stages_scale_with_the_paper_steps():
    cfg = get_config("gpu-mini")
    assert [scaled_steps(SCALED_DOWN.arms[e], cfg) for e in configurations()] == [2160, 2400, 3000, 3000, 1200]
    frame = table5(cfg)
    assert frame.loc["table5-1", "paper BLURB avg"] == pytest.approx(78.03)
    assert frame.loc["table5-2", "here: base"] == "minilm"


def test_experiment_selection_adds_prerequisites_in_order():
    assert resolve_ids("table5-1") == ["science", "table5-1"]
    assert resolve_ids("5") == ["table5-4", "table5-5"]
    assert resolve_ids("all") == ["science", "table5-1", "table5-2", "table5-3", "table5-4", "table5-5"]
    with pytest.raises(KeyError, match="unknown experiment"):
        resolve_ids("table5-9")


def test_every_profile_has_a_valid_batch_and_schedule():
    from medibio.pretrain.batching import plan_batch

    for cfg in CONFIGS.values():
        assert 0 < cfg.warmup_steps < cfg.max_steps
        assert plan_batch(cfg.effective_batch, cfg.per_device_batch, cfg.paper_processes or 1).effective == \
            cfg.effective_batch


def test_book_profiles_map_to_pretraining_configs():
    from medibio.pretrain.configs import config_for_profile

    assert config_for_profile("cpu").name == "mini" and config_for_profile("gpu").name == "gpu-mini"
    assert config_for_profile("paper").effective_batch == 49_152
    with pytest.raises(KeyError, match="cpu"):
        config_for_profile("laptop")


def test_limit_runs_the_same_config_shape_on_a_few_sequences() -> None:
    from medibio.pretrain import configs

    full = configs.get_config("gpu-mini")
    assert configs.for_run(full) is full and configs.for_run(full, None) is full
    limited = configs.for_run(full, 4)
    assert limited.name == "gpu-mini-limit4" and limited.max_steps == 4
    assert limited.per_device_batch == 4
    # gradient accumulation (effective / per-device batch) is the full config's: 256 / 128 = 2
    assert limited.effective_batch // limited.per_device_batch == full.effective_batch // full.per_device_batch == 2
    assert limited.model.vocab_size == 2_000 and limited.model.layers == full.model.layers
    assert configs.for_run(limited, 4) is limited  # idempotent


def test_pretrain_cli_limit_reaches_the_run_and_is_checked(monkeypatch, capsys) -> None:
    """``medibio pretrain --limit N`` puts the limit into the run's settings (as ``finetune --limit`` does),
    without leaving it in the environment; 0 is a one-line mistake; the default config is the default
    profile's."""
    from medibio.core import profiles
    from medibio.core.errors import MedibioError
    from medibio.pretrain import configs, trainer
    from tests.support.cli import run_main

    seen = {}

    def fake_run(config, **kwargs):
        seen.update(config=config, **kwargs)
        raise MedibioError("stopped before training")

    monkeypatch.setattr(trainer, "run_pretraining", fake_run)
    code, _, err = run_main(["pretrain", "--limit", "3"], capsys)
    assert code == 2 and "stopped before training" in err
    assert seen["settings"].limit == 3 and "MEDIBIO_LIMIT" not in os.environ
    default = get_config(profiles.get(profiles.DEFAULT_PROFILE).pretrain_config)
    assert seen["config"] == default and configs.for_run(default, seen["settings"].limit).name == "mini-limit3"
    code, _, err = run_main(["pretrain", "--limit", "0"], capsys)
    assert code == 2 and "--limit" in err and "Traceback" not in err
