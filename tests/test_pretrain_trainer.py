"""The training loop: run record, resume after a kill, continual pretraining, loading into fine-tuning heads."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from medibio.core.settings import Settings
from medibio.pretrain import trainer
from medibio.pretrain.configs import get_config
from medibio.pretrain.plan import plan_pretraining
from medibio.pretrain.trainer import (
    ResumeError,
    Stopped,
    curve_frame,
    latest_checkpoint,
    model_folder,
    run_pretraining,
)
from medibio.pretrain.vocab import train_tokenizer

WORDS = [
    "the", "patient", "kidney", "liver", "insulin", "glucose", "protein", "receptor", "expression",
    "tumour", "cells", "blood", "heart", "therapy", "dose", "response", "mutation", "pathway",
    "infection", "antibody", "was", "were", "in", "of", "and", "with",
]
CFG = get_config("smoke").with_overrides(max_steps=6, warmup_steps=1, save_every=3, log_every=1)


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # shared machine: keep the footprint small
    yield
    torch.set_num_threads(threads)


def _settings(results: Path, cache: Path) -> Settings:
    return Settings(results_root=results, cache_root=cache, progress=False)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    rng = np.random.default_rng(0)
    path = tmp_path_factory.mktemp("corpus") / "docs.txt"
    docs = ["\n".join(" ".join(rng.choice(WORDS, size=12)) + "." for _ in range(4)) for _ in range(60)]
    path.write_text("\n\n".join(docs) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def tokenizer_dir(corpus, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("tok")
    train_tokenizer(corpus.read_text().split("\n"), out, vocab_size=80)
    return out


@pytest.fixture(scope="module")
def full_settings(tmp_path_factory, cache) -> Settings:
    return _settings(tmp_path_factory.mktemp("full"), cache)


@pytest.fixture(scope="module")
def full_run(corpus, tokenizer_dir, full_settings):
    return run_pretraining(CFG, corpus=str(corpus), tokenizer_dir=tokenizer_dir, progress=False,
                           settings=full_settings)


@pytest.fixture(scope="module")
def full_model(full_run, full_settings) -> str:
    return str(model_folder(full_run, full_settings))


def test_run_record_has_curves_and_batch_layout(full_run, full_model, full_settings):
    run = full_run.details
    assert full_run.ok and full_run.kind == "pretrain" and run["steps_done"] == 6
    assert [c["step"] for c in run["curve"]] == [1, 2, 3, 4, 5, 6]
    assert all(c["tokens_per_s"] > 0 and np.isfinite(c["loss"]) for c in run["curve"])
    assert run["curve"][0]["lr"] == 0.0 and run["curve"][1]["lr"] == pytest.approx(CFG.learning_rate)
    assert run["batch"] == {"per_device": 4, "processes": 1, "accumulation": 2, "effective": 8,
                            "seq_length": 32, "tokens_per_step": 256}
    assert run["tokens_seen"] == 6 * 256
    assert run["init"] == {"kind": "scratch", "from": None}
    frame = curve_frame(full_run)
    assert list(frame["step"]) == [1, 2, 3, 4, 5, 6] and {"loss", "lr", "tokens_per_s"} <= set(frame.columns)
    assert run["corpus"]["stats"]["documents"] == 60
    assert Path(full_model, "config.json").exists()
    saved = __import__("json").loads(full_run.path(full_settings.results_root).read_text())
    assert saved["run_id"] == full_run.run_id and saved["status"] == "ok" and saved["kind"] == "pretrain"


def test_resume_after_kill_gives_the_same_next_loss(full_run, corpus, tokenizer_dir, tmp_path, cache):
    settings = _settings(tmp_path / "killed", cache)
    with pytest.raises(Stopped) as stopped:  # killed after step 4: only the step-3 checkpoint survives
        run_pretraining(CFG, corpus=str(corpus), tokenizer_dir=tokenizer_dir, progress=False, stop_after=4,
                        settings=settings)
    assert stopped.value.steps_done == 4 and latest_checkpoint(stopped.value.workdir).name == "step-0000003"
    plan = plan_pretraining(CFG, str(corpus), tokenizer_dir=tokenizer_dir, settings=settings)
    assert stopped.value.workdir == plan.key.work_path(settings.results_root)
    assert not plan.key.path(settings.results_root).exists()  # no record for a run that did not finish
    resumed = run_pretraining(CFG, corpus=str(corpus), tokenizer_dir=tokenizer_dir, progress=False,
                              settings=settings)
    assert resumed.details["resumed_from"] == [3]
    full = {c["step"]: c["loss"] for c in full_run.details["curve"]}
    again = {c["step"]: c["loss"] for c in resumed.details["curve"]}
    for step in (4, 5, 6):
        assert again[step] == pytest.approx(full[step], rel=1e-6, abs=1e-6)
    assert resumed.details["tokens_seen"] == full_run.details["tokens_seen"]


def _weights(folder: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(folder / "model.safetensors"))


def test_resume_under_bf16_autocast_gives_the_same_bits(corpus, tokenizer_dir, tmp_path, cache, monkeypatch):
    """A config asking for ``auto`` precision trains under bf16 autocast on a CPU with native bf16 (forced
    here: this test's CPU may emulate it); a run killed after step 4 and resumed from its step-3 checkpoint
    ends with the losses and weights, bit for bit, of an uninterrupted run."""
    import torch

    from medibio.core import precision

    monkeypatch.setattr(precision, "cpu_has_bf16", lambda: True)
    cfg = CFG.with_overrides(mixed_precision="auto")
    run = {"corpus": str(corpus), "tokenizer_dir": tokenizer_dir, "progress": False}
    whole_settings, killed_settings = _settings(tmp_path / "whole", cache), _settings(tmp_path / "killed", cache)
    whole = run_pretraining(cfg, settings=whole_settings, **run)
    assert whole.details["mixed_precision"] == "bf16" and whole.config["precision"] == "bf16"
    with pytest.raises(Stopped):
        run_pretraining(cfg, stop_after=4, settings=killed_settings, **run)
    resumed = run_pretraining(cfg, settings=killed_settings, **run)
    assert resumed.details["resumed_from"] == [3]
    assert [c["loss"] for c in resumed.details["curve"]] == [c["loss"] for c in whole.details["curve"]]
    a, b = _weights(model_folder(whole, whole_settings)), _weights(model_folder(resumed, killed_settings))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    fp32 = plan_pretraining(CFG, str(corpus), tokenizer_dir=tokenizer_dir, settings=whole_settings)
    assert fp32.key.config_digest != whole.config_digest  # another precision is another run


HEADS = {
    "token": ("AutoModelForTokenClassification", {"num_labels": 5}),
    "single-label": ("AutoModelForSequenceClassification", {"num_labels": 3}),
    "multi-label": ("AutoModelForSequenceClassification",
                    {"num_labels": 10, "problem_type": "multi_label_classification"}),
    "regression": ("AutoModelForSequenceClassification", {"num_labels": 1, "problem_type": "regression"}),
}


@pytest.mark.parametrize("head", list(HEADS))
def test_checkpoint_loads_into_every_finetuning_head(full_model, head):
    import torch
    import transformers
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    cls_name, kwargs = HEADS[head]
    path = full_model
    model, info = getattr(transformers, cls_name).from_pretrained(path, output_loading_info=True, **kwargs)
    assert all(k.startswith(("classifier", "pooler")) for k in info["missing_keys"]), info["missing_keys"]
    mlm = AutoModelForMaskedLM.from_pretrained(path)
    assert torch.equal(model.deberta.embeddings.word_embeddings.weight,
                       mlm.deberta.embeddings.word_embeddings.weight)  # the pretrained encoder, not a new one
    tok = AutoTokenizer.from_pretrained(path)
    enc = tok(["the kidney filters blood.", "insulin lowers glucose."], padding=True, return_tensors="pt")
    with torch.no_grad():
        logits = model(**enc).logits
    expected = (2, enc["input_ids"].shape[1], 5) if head == "token" else (2, kwargs["num_labels"])
    assert tuple(logits.shape) == expected


def test_continual_keeps_the_checkpoint_vocabulary(full_run, full_model, corpus, tmp_path, cache):
    rec = run_pretraining(CFG.with_overrides(max_steps=2), corpus=str(corpus), init=full_model, progress=False,
                          settings=_settings(tmp_path / "cont", cache))
    assert rec.details["init"] == {"kind": "continual", "from": full_model}
    assert rec.details["tokenizer"]["fingerprint"] == full_run.details["tokenizer"]["fingerprint"]
    assert rec.details["curve"][0]["loss"] < full_run.details["curve"][0]["loss"]  # starts from learned weights


@pytest.mark.slow
def test_continual_from_minilm_bert(corpus, tmp_path, cache):
    from transformers import AutoModelForTokenClassification

    cfg = CFG.with_overrides(max_steps=1, effective_batch=2, per_device_batch=2)
    settings = _settings(tmp_path / "minilm", cache)
    rec = run_pretraining(cfg, corpus=str(corpus), init="minilm", progress=False, settings=settings)
    assert rec.model["model_type"] == "bert" and rec.details["tokenizer"]["vocab_size"] == 30522
    assert rec.ok and np.isfinite(rec.details["final_loss"])
    head = AutoModelForTokenClassification.from_pretrained(model_folder(rec, settings), num_labels=3)
    assert head.config.model_type == "bert"


@pytest.mark.slow
def test_minilm_continued_in_sumpubmed_form_warms_its_new_head_up_first(corpus, tmp_path, cache):
    """MiniLM has no MLM head: the run gives it a seeded new one (decoder tied to the word embeddings) and one
    more embedding row for <dig>; in the head's warm-up steps the encoder, embeddings included, stays as it
    was, and the saved tokenizer normalises BLURB text to SumPubMed's form."""
    import torch
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    from medibio.models import zoo
    from medibio.pretrain.vocab import is_sumpubmed_form

    cfg = CFG.with_overrides(max_steps=2, effective_batch=2, per_device_batch=2, text_form="sumpubmed",
                             head_warmup_steps=2)
    settings = _settings(tmp_path / "minilm-form", cache)
    rec = run_pretraining(cfg, corpus=str(corpus), init="minilm", progress=False, settings=settings)
    assert rec.details["tokenizer"]["vocab_size"] == 30523
    folder = model_folder(rec, settings)
    trained = AutoModelForMaskedLM.from_pretrained(folder)
    minilm = AutoModelForMaskedLM.from_pretrained(zoo.resolve("minilm"))
    before = dict(minilm.bert.named_parameters())
    for name, p in trained.bert.named_parameters():
        if name == "embeddings.word_embeddings.weight":
            assert torch.equal(p[:-1], before[name]) and p.shape[0] == 30523
        else:
            assert torch.equal(p, before[name]), name
    torch.manual_seed(cfg.seed)  # the head the run started from: seeded, so it can be rebuilt here
    start = AutoModelForMaskedLM.from_pretrained(zoo.resolve("minilm"))
    assert not torch.equal(trained.cls.predictions.transform.dense.weight,
                           start.cls.predictions.transform.dense.weight)  # the head learned
    assert is_sumpubmed_form(AutoTokenizer.from_pretrained(folder))


@pytest.mark.slow
def test_two_processes_train_like_one_process_with_accumulation(corpus, tokenizer_dir, tmp_path, cache):
    """4 per device x 2 processes x 1 step and 4 x 1 x 2 see the same examples, masks and dropout."""
    import json
    import os
    import subprocess
    import sys

    base = ["--config", "smoke", "--max-steps", "3", "--corpus", str(corpus)]
    env = {**os.environ, "ACCELERATE_USE_CPU": "1", "OMP_NUM_THREADS": "1", "MEDIBIO_CACHE": str(cache)}
    one = run_pretraining("smoke", corpus=str(corpus), max_steps=3, progress=False,
                          settings=_settings(tmp_path / "one", cache))
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "-m", "medibio", "pretrain",
           *base, "--results-root", str(tmp_path / "two"), "--json"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    two = json.loads(proc.stdout[proc.stdout.index("{"):])
    assert two["environment"]["num_processes"] == 2 and two["details"]["batch"]["accumulation"] == 1
    assert one.details["batch"]["accumulation"] == 2 and two["config_digest"] == one.config_digest
    assert [c["loss"] for c in two["details"]["curve"]] == pytest.approx(
        [c["loss"] for c in one.details["curve"]], rel=1e-5)


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_run_lives_in_the_folder_of_its_configuration(corpus, tokenizer_dir, tmp_path, cache):
    """The same configuration resumes (then reuses) its own run; a changed one trains into a new record and
    leaves the old one untouched."""
    settings = _settings(tmp_path / "results", cache)
    run = {"corpus": str(corpus), "tokenizer_dir": tokenizer_dir, "progress": False, "tag": "t", "settings": settings}
    with pytest.raises(Stopped):  # killed after step 4: the step-3 checkpoint survives
        run_pretraining(CFG, stop_after=4, **run)
    plan = plan_pretraining(CFG, str(corpus), tokenizer_dir=tokenizer_dir, tag="t", settings=settings)
    folder = plan.key.folder(settings.results_root)
    assert folder.parent.parent.parent == tmp_path / "results" / "pretrain" / CFG.name / "scratch"
    assert folder.name == plan.key.config_digest

    resumed = run_pretraining(CFG, **run)  # same configuration: its own checkpoints
    assert resumed.ok and resumed.details["resumed_from"] == [3]
    assert resumed.path(settings.results_root).parent == folder and resumed.config_digest == plan.key.config_digest
    before = _files(folder)
    again = run_pretraining(CFG, **run)  # finished: returned as it is, nothing trained or written
    assert again.run_id == resumed.run_id and again.created == resumed.created and _files(folder) == before

    changed = run_pretraining(CFG.with_overrides(learning_rate=CFG.learning_rate / 2), **run)
    assert changed.ok and changed.details["resumed_from"] == []
    new_folder = changed.path(settings.results_root).parent
    assert new_folder.parent == folder.parent and new_folder != folder
    assert changed.config_digest != resumed.config_digest
    assert _files(folder) == before, "the earlier configuration's folder was touched"


def test_a_checkpoint_of_another_configuration_is_refused(corpus, tokenizer_dir, tmp_path, cache, monkeypatch):
    """A work folder holding another configuration's checkpoint is refused before anything is loaded."""
    import shutil

    settings = _settings(tmp_path / "results", cache)
    with pytest.raises(Stopped) as stopped:
        run_pretraining(CFG, corpus=str(corpus), tokenizer_dir=tokenizer_dir, progress=False, stop_after=4,
                        settings=settings)
    other = plan_pretraining(CFG.with_overrides(seed=CFG.seed + 1), str(corpus), tokenizer_dir=tokenizer_dir,
                             settings=settings)
    shutil.copytree(stopped.value.workdir, other.key.work_path(settings.results_root))

    def too_late(*_args, **_kwargs):  # a model of another size would fail here, on a tensor size mismatch
        raise AssertionError("the work folder's tokenizer, corpus or weights were loaded before the check")

    monkeypatch.setattr(trainer, "prepare_tokenizer", too_late)
    with pytest.raises(ResumeError, match="configuration"):
        run_pretraining(CFG.with_overrides(seed=CFG.seed + 1), corpus=str(corpus), tokenizer_dir=tokenizer_dir,
                        progress=False, settings=settings)


def test_the_record_carries_the_shared_provenance(full_run):
    from medibio.core import provenance

    env = provenance.environment()
    assert full_run.versions == env["versions"] | {"torch_num_threads": full_run.cpu_threads}
    assert full_run.git_commit == env["git_commit"] and full_run.device.startswith("cpu")
    assert full_run.cpu_threads == 1 and set(full_run.environment) == {
        "device", "cpu", "cpu_flags", "num_processes", "cpu_threads", "versions", "git_commit"}
    assert full_run.environment["cpu"] == env["cpu"] and full_run.environment["cpu_flags"] == env["cpu_flags"]
    assert full_run.config["config"]["learning_rate"] == CFG.learning_rate


def test_a_checkpoints_state_is_the_progress_a_resume_starts_from():
    """What a checkpoint saves (``trainer_state.json``) gives back, through JSON, the progress the run had, with
    the curve's points at the first step, every ``log_every`` steps and the last, each the mean of its window."""
    import json

    from medibio.pretrain.batching import plan_batch

    config = CFG.with_overrides(max_steps=5, log_every=2)
    layout = plan_batch(config.effective_batch, config.per_device_batch, 1)
    losses, lrs = [5.0, 4.0, 3.5, 3.0, 2.0], [0.0, 1e-3, 8e-4, 6e-4, 4e-4]
    progress = trainer._Progress()
    for loss, lr in zip(losses, lrs, strict=True):
        progress.count(loss, 0.25, 100, lr, config)
    state = json.loads(json.dumps(progress.state("d1g35t", layout, config.seed)))
    resumed = trainer._Progress.saved(state)

    assert [p["step"] for p in progress.curve] == [1, 2, 4, 5]
    assert [p["loss"] for p in progress.curve] == [losses[0], losses[1], np.mean(losses[2:4]), losses[4]]
    assert [p["lr"] for p in progress.curve] == [lrs[0], lrs[1], lrs[3], lrs[4]]
    assert state["data_offset"] == 5 * layout.effective and state["config_digest"] == "d1g35t"
    assert (resumed.step, resumed.curve, resumed.tokens_seen) == (5, progress.curve, 5 * 100)
    assert resumed.resumed_from == [5] and resumed.elapsed == progress.elapsed
