"""Profiles, presets and overrides: one source of truth for every fine-tuning hyperparameter."""

from __future__ import annotations

import pytest

from medibio.core import profiles
from medibio.core.errors import InputFormatError
from medibio.finetune import runner, variants
from medibio.tasks import registry
from medibio.training import config as presets


def test_blurb_max_lengths_and_search_space_on_gpu():
    assert presets.preset("ChemProt", "gpu").max_length == 256
    assert presets.preset("DDI", "gpu").max_length == 256
    assert presets.preset("GAD", "gpu").max_length == 128
    assert presets.preset("PubMedQA", "gpu").max_length == 512
    for spec in registry.DATASETS:
        cfg = presets.preset(spec.name, "paper")
        assert cfg.learning_rate in presets.BLURB_LEARNING_RATES
        assert cfg.batch_size in presets.BLURB_BATCH_SIZES
        assert 2 <= cfg.epochs <= 60
        assert cfg.max_train_examples is None and cfg.max_test_examples is None
        assert cfg.warmup_ratio == 0.1 and cfg.dropout == 0.1


def test_cpu_profile_never_caps_test_and_defaults_to_minilm():
    prof = profiles.get("cpu")
    assert prof.model == "minilm" and profiles.DEFAULT_PROFILE == "cpu"
    for spec in registry.DATASETS:
        cfg = presets.preset(spec.name, "cpu")
        assert cfg.max_test_examples is None
        assert cfg.max_length <= spec.max_length
    assert prof.default_seeds("BIOSSES") == (1, 2, 3) and prof.default_seeds("PubMedQA") == (1, 2, 3)
    assert len(prof.default_seeds("BC5-chem")) == 1


def test_smoke_profile_is_tiny():
    cfg = presets.preset("JNLPBA", "smoke")
    assert profiles.get("smoke").model == "tiny-deberta"
    assert cfg.max_train_examples == cfg.max_dev_examples == cfg.max_test_examples == 32
    assert cfg.max_length == 64


def test_overrides_file_then_flags(fixtures_dir):
    data = presets.load_config_file(fixtures_dir / "finetune" / "overrides.yaml")
    chem = presets.apply_overrides(presets.preset("chemprot", "gpu"), "ChemProt", data)
    assert (chem.learning_rate, chem.epochs, chem.batch_size, chem.max_length) == (1e-5, 4, 16, 200)
    gad = presets.apply_overrides(presets.preset("GAD", "gpu"), "GAD", data)
    assert (gad.learning_rate, gad.batch_size) == (1e-5, 32)
    flags = {**data, "learning_rate": 5e-5, "epochs": None}  # a CLI flag beats the file; None = not given
    assert presets.apply_overrides(presets.preset("GAD", "gpu"), "GAD", flags).learning_rate == 5e-5


def test_bad_config_file_names_the_file_and_key(fixtures_dir):
    path = fixtures_dir / "finetune" / "bad_option.yaml"
    with pytest.raises(InputFormatError, match="bad_option.yaml.*warmup_steps"):
        presets.load_config_file(path)
    with pytest.raises(ValueError, match="unknown fine-tuning option"):
        presets.FinetuneConfig().replace(lr=1)


def test_string_values_are_coerced():
    cfg = presets.FinetuneConfig().replace(learning_rate="3e-5", epochs="4", freeze_lower="true", llrd="0.9")
    assert (cfg.learning_rate, cfg.epochs, cfg.freeze_lower, cfg.llrd) == (3e-5, 4, True, 0.9)


def test_longer_training_multiplies_epochs():
    assert presets.FinetuneConfig(epochs=3, longer_training=2.0).effective_epochs == 6
    assert presets.FinetuneConfig(epochs=3, longer_training=1.5).effective_epochs == 5


def test_variant_names_keep_stability_runs_apart():
    cfg = presets.FinetuneConfig()
    assert variants.variant_name(cfg) == "base"
    assert variants.variant_name(cfg, ["STS-B", "SICK"]) == "ift-STS-B+SICK"
    cfg = cfg.replace(freeze_lower=True, llrd=0.9, reinit_top=2, bias_correction=False, longer_training=2.0)
    assert variants.variant_name(cfg) == "freeze+llrd0.9+reinit2+nobiascorr+long2"
    assert variants.variant_name(cfg, ["STS-B"]).startswith("ift-STS-B+freeze")
    assert variants.variant_name(presets.FinetuneConfig(), base="grid-lr3e-05-bs16-ep3") == "grid-lr3e-05-bs16-ep3"


def test_budget_table_lists_every_dataset():
    rows = presets.budget_table("cpu")
    assert [r["dataset"] for r in rows] == registry.names()
    assert all(r["epochs"] >= 1 for r in rows)


def test_launch_command_line_round_trip(monkeypatch, tmp_path):
    """A request for several processes reaches them whole: the request as ``medibio finetune`` arguments, the
    overrides as the ``--config`` file the command reads back, the results root in the settings' environment."""
    from medibio.core.settings import Settings
    from medibio.runs import launch

    class Launched(Exception):
        pass

    seen = {}

    def launched(args, processes, settings, **_):
        config = args[args.index("--config") + 1]
        seen.update(args=list(args), processes=processes, env=settings.to_env(),
                    overrides=presets.load_config_file(config))
        raise Launched  # the processes would run here; the request is all this test checks

    monkeypatch.setattr(launch, "accelerate_launch", launched)
    overrides = {"learning_rate": 3e-5, "freeze_lower": True, "bias_correction": False, "llrd": None,
                 "class_weighting": "balanced"}
    with pytest.raises(Launched):
        runner.run_finetune("BIOSSES", "tiny-deberta", [1, 2], "smoke", overrides, intermediate=["STS-B"],
                            settings=Settings(results_root=tmp_path / "x", processes=2))
    args = seen["args"]
    assert args[:5] == ["finetune", "--task", "BIOSSES", "--profile", "smoke"]
    text = " ".join(args)
    for part in ("--seeds 1,2", "--intermediate STS-B", "--model tiny-deberta"):
        assert part in text
    assert seen["overrides"] == {"learning_rate": 3e-5, "freeze_lower": True, "bias_correction": False,
                                 "class_weighting": "balanced"}
    assert "llrd" not in seen["overrides"]
    assert seen["processes"] == 2 and seen["env"]["MEDIBIO_RESULTS"] == str(tmp_path / "x")
    assert seen["env"]["MEDIBIO_PROCESSES"] == "1"  # the launched processes do not launch again


def test_class_weighting_is_validated_and_set_for_re_and_qa_on_cpu():
    assert presets.preset("DDI", "cpu").class_weighting == "balanced"
    assert presets.preset("BioASQ", "cpu").class_weighting == "balanced"
    assert presets.preset("GAD", "cpu").class_weighting == "none"
    assert presets.preset("DDI", "gpu").class_weighting == "none"  # full data: the plain BLURB loss
    with pytest.raises(ValueError, match="class_weighting: expected one of none, sqrt, balanced, got 'inverse'"):
        presets.FinetuneConfig().replace(class_weighting="inverse")


def test_budget_frame_says_all_where_nothing_is_capped():
    frame = presets.budget_frame("cpu")
    assert frame.loc["BIOSSES", "max_train_examples"] == "all" and frame.loc["BC5-chem", "max_train_examples"] == "800"
    assert frame.loc["DDI", "learning_rate"] == "0.0001" and frame.loc["DDI", "class_weighting"] == "balanced"


def test_every_option_has_one_rule_used_by_config_overrides_and_flags():
    assert set(presets.OPTION_RULES) == set(presets.field_names())
    with pytest.raises(presets.OptionError, match=r"fine-tuning option epochs: expected an integer >= 1, got 0"):
        presets.FinetuneConfig(epochs=0)
    assert presets.check_option("learning_rate", "3e-5") == 3e-5
    with pytest.raises(ValueError, match="unknown fine-tuning option 'lr'"):
        presets.check_option("lr", 1)


@pytest.mark.parametrize(("overrides", "message"), [
    ({"epochs": 0}, "fine-tuning overrides epochs: expected epochs to be an integer >= 1, got 0"),
    ({"epochs": "abc"}, "expected epochs to be an integer >= 1, got 'abc'"),
    ({"learning_rate": -1}, "learning_rate to be a finite number > 0, got -1"),
    ({"learning_rate": float("nan")}, "learning_rate to be a finite number > 0"),
    ({"freeze_lower": "flase"}, "freeze_lower to be true or false, got 'flase'"),
    ({"tasks": {"BIOSSES": {"epochs": 0}}}, "overrides tasks.BIOSSES.epochs: expected tasks.BIOSSES.epochs to be"),
    ({"tasks": {"BOGUS": {"epochs": 2}}}, "overrides tasks.BOGUS: expected a dataset under tasks: a BLURB dataset "
                                          "or intermediate task (BC5-chem"),
    ({"tasks": ["BIOSSES"]}, "overrides tasks: expected tasks to map dataset names to their options"),
    ({"tasks": {"BIOSSES": ["epochs"]}}, "tasks.BIOSSES: expected a mapping of fine-tuning options"),
    ({"warmup_steps": 3}, "expected a fine-tuning option (adam_epsilon, "),
    (["epochs"], "expected a mapping of fine-tuning options (and 'tasks')"),
])
def test_overrides_from_code_get_the_checks_of_config_files(overrides, message):
    with pytest.raises(presets.OptionError) as info:
        presets.apply_overrides(presets.preset("BIOSSES", "smoke"), "BIOSSES", overrides)
    assert message in str(info.value)


def test_overrides_from_code_are_converted_and_per_task_names_canonical():
    checked = presets.check_overrides({"learning_rate": "1e-4", "epochs": None, "tasks": {"biosses": {"epochs": "5"}}})
    assert checked == {"learning_rate": 1e-4, "tasks": {"BIOSSES": {"epochs": 5}}}  # None: not given
    cfg = presets.apply_overrides(presets.preset("BIOSSES", "smoke"), "biosses", checked)
    assert (cfg.learning_rate, cfg.epochs) == (1e-4, 5)
    sts = presets.apply_overrides(presets.intermediate_preset("STS-B", "smoke"), "STS-B", {"tasks": {"stsb": {"epochs": 4}}})
    assert sts.epochs == 4


def test_run_finetune_refuses_bad_overrides_before_any_work(tmp_path):
    from medibio.core.settings import Settings

    settings = Settings(results_root=tmp_path / "results", data_root=tmp_path)
    with pytest.raises(presets.OptionError, match="epochs to be an integer >= 1, got 0"):
        runner.run_finetune("BIOSSES", "minilm", profile="smoke", config_overrides={"epochs": 0},
                            settings=settings)
    with pytest.raises(presets.OptionError, match="'BOGUS'"):
        runner.run_finetune("BIOSSES", "minilm", profile="smoke", config_overrides={"tasks": {"BOGUS": {}}},
                            settings=settings)
    assert not (tmp_path / "results").exists()


def test_a_notebooks_finetune_config_gets_the_file_checks(tmp_path):
    from medibio.book.parameters import resolve

    config = tmp_path / "ft.yaml"
    config.write_text("tasks:\n  BIOSSES:\n    epochs: 0\n", encoding="utf-8")
    with pytest.raises(InputFormatError, match=r"ft.yaml:3: expected tasks.BIOSSES.epochs to be an integer >= 1"):
        resolve("smoke", finetune_config=str(config))


def test_launched_processes_repeat_the_request() -> None:
    """Fine-tuning and SciERC hand a request to accelerate's processes as the same arguments."""
    from medibio.finetune.runner import command_args
    from medibio.runs.launch import request_args

    assert command_args("BIOSSES,GAD", "minilm", "1,2", "cpu", ["STS-B"], True, "x", True) == [
        "finetune", "--task", "BIOSSES,GAD", "--profile", "cpu", "--model", "minilm", "--seeds", "1,2",
        "--intermediate", "STS-B", "--variant", "x", "--allow-overlap", "--force"]
    assert command_args("HoC") == ["finetune", "--task", "HoC", "--profile", "cpu"]
    assert request_args(["scierc", "train"], "smoke", None, [3], False) == [
        "scierc", "train", "--profile", "smoke", "--seeds", "3"]


def test_a_limited_run_also_cuts_its_sequences() -> None:
    """``--limit`` checks that a profile's code runs: few examples, and sequences of at most 128 sub-tokens
    (a model pretrained for a few limited steps splits a BIOSSES pair into 512 pieces)."""
    full = presets.preset("BIOSSES", "gpu")
    limited = presets.preset("BIOSSES", profiles.get("gpu").limited(4))
    assert full.max_length > presets.LIMITED_MAX_LENGTH == limited.max_length == 128
    assert (limited.max_train_examples, limited.epochs) == (4, full.epochs)  # the rest is the profile's
