"""The run digest: equal configurations give equal digests, any change gives another one."""

from __future__ import annotations

import math
import shutil

import pytest

from medibio.core import hashing
from medibio.core.settings import Settings
from tests.support.runs import safetensors_of


def test_digest_ignores_key_order_and_container_type() -> None:
    a = hashing.digest({"lr": 1e-4, "caps": (800, 1000), "chain": ["STS-B"]})
    b = hashing.digest({"chain": ("STS-B",), "caps": [800, 1000], "lr": 0.0001})
    assert a == b and len(a) == hashing.DIGEST_LENGTH


def test_digest_changes_with_any_value() -> None:
    base = {"lr": 1e-4, "epochs": 2, "class_weighting": "none"}
    seen = {hashing.digest(base)}
    for key, value in (("lr", 2e-4), ("epochs", 3), ("class_weighting", "balanced")):
        seen.add(hashing.digest({**base, key: value}))
    assert len(seen) == 4


def test_digest_is_the_sha256_of_canonical_json() -> None:
    import hashlib

    payload = {"b": 1, "a": [1.5, None, True]}
    assert hashing.canonical_json(payload) == '{"a":[1.5,null,true],"b":1}'
    assert hashing.digest(payload) == hashlib.sha256(b'{"a":[1.5,null,true],"b":1}').hexdigest()[:12]


def test_non_finite_values_are_refused() -> None:
    with pytest.raises(ValueError, match="nan"):
        hashing.digest({"lr": math.nan})


def test_files_fingerprint_relative_names_and_absent(tmp_path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "train.tsv").write_text("x\t1\n", encoding="utf-8")
    fp = hashing.files_fingerprint([tmp_path / "d" / "train.tsv", tmp_path / "d" / "dev.tsv"], root=tmp_path)
    assert fp == {"d/dev.tsv": "absent",
                  "d/train.tsv": hashing.file_sha256(tmp_path / "d" / "train.tsv")[:16]}
    (tmp_path / "d" / "train.tsv").write_text("x\t2\n", encoding="utf-8")
    assert hashing.files_fingerprint([tmp_path / "d" / "train.tsv"], root=tmp_path) != {
        "d/train.tsv": fp["d/train.tsv"]}


# --- the fine-tuning digest (medibio.finetune.runner.plan_run): every field that can change a result -------

@pytest.fixture()
def inputs(tmp_path):
    """A model folder and a data root with BIOSSES's files, both small enough to rewrite byte by byte."""
    from medibio.tasks import loaders

    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text('{"model_type": "bert"}', encoding="utf-8")
    (model / "model.safetensors").write_bytes(safetensors_of(b"\x01" * 64))
    (model / "vocab.txt").write_text("[PAD]\n[UNK]\n", encoding="utf-8")
    data = tmp_path / "data"
    data.mkdir()
    for split in loaders.SPLITS:
        for path in loaders.split_files("BIOSSES", split, data):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"{split} rows\n", encoding="utf-8")
    return model, data


def _settings(data, results_root=None) -> Settings:
    """Settings reading ``data`` (no example limit); the results root is the default unless given."""
    return Settings(data_root=data, **({"results_root": results_root} if results_root else {}))


def _plan(model, data, results_root=None, **kwargs):
    from medibio.finetune import runner

    return runner.plan_run("BIOSSES", str(model), 1, "smoke", settings=_settings(data, results_root), **kwargs)


def _digest(model, data, results_root=None, **kwargs) -> str:
    return _plan(model, data, results_root, **kwargs).key.config_digest


CHANGES = {
    "hyperparameter": {"learning_rate": 1e-3},
    "cap on training examples": {"max_train_examples": 16},
    "cap on dev examples": {"max_dev_examples": 8},
    "class weighting": {"class_weighting": "balanced"},
    "freeze_lower": {"freeze_lower": True},
    "llrd": {"llrd": 0.9},
    "reinit_top": {"reinit_top": 1},
    "bias_correction": {"bias_correction": False},
    "longer_training": {"longer_training": 2.0},
    "per-task override": {"tasks": {"BIOSSES": {"epochs": 5}}},
}


@pytest.mark.parametrize("what", list(CHANGES))
def test_the_digest_changes_with_each_configuration_field(inputs, what) -> None:
    model, data = inputs
    assert _digest(model, data, overrides=CHANGES[what]) != _digest(model, data)


def test_the_digest_changes_with_the_intermediate_chain_and_its_budget(inputs) -> None:
    model, data = inputs
    seen = {_digest(model, data), _digest(model, data, intermediate="STS-B"),
            _digest(model, data, intermediate="SICK"), _digest(model, data, intermediate="STS-B,SICK"),
            _digest(model, data, intermediate="STS-B", overrides={"intermediate_epochs": 3}),
            _digest(model, data, intermediate="STS-B", overrides={"intermediate_max_train_examples": 8})}
    assert len(seen) == 6


@pytest.mark.parametrize("name", ["model.safetensors", "vocab.txt", "config.json"])
def test_the_digest_changes_with_the_model_weights_tokenizer_and_config(inputs, name) -> None:
    model, data = inputs
    before = _digest(model, data)
    path = model / name
    changed = path.read_bytes()
    # one byte changed (a weights file keeps its length: a longer one is no complete safetensors file)
    path.write_bytes(changed[:-1] + bytes([changed[-1] ^ 1]) if name.endswith(".safetensors") else changed + b" ")
    assert _digest(model, data) != before


@pytest.mark.parametrize("split", ["train", "dev", "test"])
def test_the_digest_changes_with_a_data_files_bytes(inputs, split) -> None:
    from medibio.tasks import loaders

    model, data = inputs
    before = _digest(model, data)
    path = loaders.split_files("BIOSSES", split, data)[0]
    path.write_text(path.read_text(encoding="utf-8") + "one more row\n", encoding="utf-8")
    assert _digest(model, data) != before


def test_the_digest_ignores_what_does_not_change_results(inputs, tmp_path) -> None:
    """Results root, data root location, key order of overrides, another task's overrides, the variant
    label and files beside the model (a README, optimizer state) leave the digest alone."""
    model, data = inputs
    overrides = {"learning_rate": 1e-3, "epochs": 4, "llrd": 0.9}
    base = _digest(model, data, overrides=overrides)
    elsewhere = tmp_path / "elsewhere"
    assert _digest(model, data, elsewhere, overrides=dict(reversed(overrides.items()))) == base
    assert _digest(model, data, overrides={**overrides, "tasks": {"GAD": {"epochs": 9}}}) == base
    moved = tmp_path / "moved-data"
    shutil.copytree(data, moved)
    assert _digest(model, moved, overrides=overrides) == base
    (model / "README.md").write_text("notes", encoding="utf-8")
    (model / "optimizer.pt").write_bytes(b"state")
    assert _digest(model, data, overrides=overrides) == base
    named = _plan(model, data, overrides=overrides, variant="my-label")
    assert named.key.config_digest == base and named.key.variant.startswith("my-label")


def test_the_intermediate_budget_reaches_the_stage_it_names(inputs) -> None:
    """``intermediate_epochs``/``intermediate_max_train_examples`` overrides set the stage's own training
    (and so its folder's digest), not only the target's record."""
    from medibio.ift import stages as chain

    model, data = inputs
    preset = _plan(model, data, intermediate="STS-B").job
    asked = _plan(model, data, intermediate="STS-B",
                  overrides={"intermediate_epochs": 3, "intermediate_max_train_examples": 8}).job
    (stage,) = asked.stages
    assert preset.stages[0]["hyperparameters"]["epochs"] == 1  # the smoke preset's intermediate_epochs
    assert stage["hyperparameters"]["epochs"] == 3 and stage["hyperparameters"]["max_train_examples"] == 8
    cfg = chain.stage_hyperparameters(stage)
    assert (cfg.epochs, cfg.max_train_examples) == (3, 8)

    def stage_digest(job) -> str:  # the identity of the stage's own record (kind "ift-stage")
        return chain.plan_stage(job.model, job.stages, job.model_hash, job.seed, job.profile, str(model),
                                "BIOSSES", job.overrides).key.config_digest

    assert stage_digest(asked) != stage_digest(preset)


@pytest.mark.parametrize(("requested", "used", "entry"), [
    ("bf16", "bf16", None), ("bf16", "no", "no"), ("fp32", "no", None), ("fp16", "no", "no"),
    ("bf16", "fp16", "fp16")])
def test_the_digest_names_the_precision_only_where_the_machine_departs_from_the_request(
        inputs, monkeypatch, requested, used, entry) -> None:
    """bf16 asked and run gives the same digest as before precision was recorded (records made on identical
    machines are shared); bf16 asked on a CPU without it (fp32) or a GPU without it (fp16) gets its own."""
    from medibio.finetune import runner

    model, data = inputs
    as_asked = {"fp32": "no"}.get(requested, requested)  # what a machine that honours the request uses
    # the runner asks medibio.core.precision.precision_for (imported into its namespace)
    monkeypatch.setattr(runner, "precision_for", lambda device=None, requested="auto": as_asked)
    plain = _plan(model, data, overrides={"mixed_precision": requested})
    monkeypatch.setattr(runner, "precision_for", lambda device=None, requested="auto": used)
    plan = _plan(model, data, overrides={"mixed_precision": requested})
    assert plan.payload.get("precision") == entry
    assert plain.payload.get("precision") is None
    assert (plan.key.config_digest == plain.key.config_digest) == (entry is None)
