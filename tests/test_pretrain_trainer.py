"""The training loop: run record, resume after a kill, continual pretraining, loading into fine-tuning heads."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from medibio.pretrain.configs import get_config
from medibio.pretrain.trainer import ResumeError, latest_checkpoint, run_pretraining
from medibio.pretrain.vocab import train_tokenizer

WORDS = [
    "the", "patient", "kidney", "liver", "insulin", "glucose", "protein", "receptor", "expression",
    "tumour", "cells", "blood", "heart", "therapy", "dose", "response", "mutation", "pathway",
    "infection", "antibody", "was", "were", "in", "of", "and", "with",
]
CFG = get_config("smoke").with_overrides(max_steps=6, warmup_steps=1, save_every=3, log_every=1)


@pytest.fixture(scope="module", autouse=True)
def _isolated_cache(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("MEDIBIO_CACHE", str(tmp_path_factory.mktemp("cache")))
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # shared machine: keep the footprint small
    yield
    torch.set_num_threads(threads)
    mp.undo()


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
def full_run(corpus, tokenizer_dir, tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("full")
    return run_pretraining(CFG, corpus=str(corpus), tokenizer_dir=tokenizer_dir, out_dir=out, progress=False)


def test_run_record_has_curves_and_batch_layout(full_run):
    assert full_run["status"] == "complete" and full_run["steps_done"] == 6
    assert [c["step"] for c in full_run["curve"]] == [1, 2, 3, 4, 5, 6]
    assert all(c["tokens_per_s"] > 0 and np.isfinite(c["loss"]) for c in full_run["curve"])
    assert full_run["curve"][0]["lr"] == 0.0 and full_run["curve"][1]["lr"] == pytest.approx(CFG.learning_rate)
    assert full_run["batch"] == {"per_device": 4, "processes": 1, "accumulation": 2, "effective": 8,
                                 "seq_length": 32, "tokens_per_step": 256}
    assert full_run["tokens_seen"] == 6 * 256
    assert full_run["init"] == {"kind": "scratch", "from": None}
    from medibio.pretrain import curve_frame

    frame = curve_frame(Path(full_run["output"]).parent)
    assert list(frame["step"]) == [1, 2, 3, 4, 5, 6] and {"loss", "lr", "tokens_per_s"} <= set(frame.columns)
    assert full_run["corpus"]["stats"]["documents"] == 60
    assert Path(full_run["output"], "config.json").exists()
    saved = __import__("json").loads(Path(full_run["output"]).parent.joinpath("run.json").read_text())
    assert saved["run_id"] == full_run["run_id"] and saved["status"] == "complete"


def test_resume_after_kill_gives_the_same_next_loss(full_run, corpus, tokenizer_dir, tmp_path):
    out = tmp_path / "killed"
    stopped = run_pretraining(CFG, corpus=str(corpus), tokenizer_dir=tokenizer_dir, out_dir=out, progress=False,
                              stop_after=4)  # killed after step 4: only the step-3 checkpoint survives
    assert stopped["status"] == "stopped" and latest_checkpoint(out).name == "step-0000003"
    resumed = run_pretraining(CFG, corpus=str(corpus), tokenizer_dir=tokenizer_dir, out_dir=out, progress=False,
                              resume=True)
    assert resumed["resumed_from"] == [3]
    full = {c["step"]: c["loss"] for c in full_run["curve"]}
    again = {c["step"]: c["loss"] for c in resumed["curve"]}
    for step in (4, 5, 6):
        assert again[step] == pytest.approx(full[step], rel=1e-6, abs=1e-6)
    assert resumed["tokens_seen"] == full_run["tokens_seen"]


def test_existing_checkpoints_need_resume(full_run, corpus, tokenizer_dir):
    with pytest.raises(ResumeError, match="--resume"):
        run_pretraining(CFG, corpus=str(corpus), tokenizer_dir=tokenizer_dir,
                        out_dir=Path(full_run["output"]).parent, progress=False)


HEADS = {
    "token": ("AutoModelForTokenClassification", {"num_labels": 5}),
    "single-label": ("AutoModelForSequenceClassification", {"num_labels": 3}),
    "multi-label": ("AutoModelForSequenceClassification",
                    {"num_labels": 10, "problem_type": "multi_label_classification"}),
    "regression": ("AutoModelForSequenceClassification", {"num_labels": 1, "problem_type": "regression"}),
}


@pytest.mark.parametrize("head", list(HEADS))
def test_checkpoint_loads_into_every_finetuning_head(full_run, head):
    import torch
    import transformers
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    cls_name, kwargs = HEADS[head]
    path = full_run["output"]
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


def test_continual_keeps_the_checkpoint_vocabulary(full_run, corpus, tmp_path):
    rec = run_pretraining(CFG.with_overrides(max_steps=2), corpus=str(corpus), init=full_run["output"],
                          out_dir=tmp_path / "cont", progress=False)
    assert rec["init"] == {"kind": "continual", "from": full_run["output"]}
    assert rec["tokenizer"]["fingerprint"] == full_run["tokenizer"]["fingerprint"]
    assert rec["curve"][0]["loss"] < full_run["curve"][0]["loss"]  # starts from learned weights


def test_continual_from_minilm_bert(corpus, tmp_path):
    from transformers import AutoModelForTokenClassification

    cfg = CFG.with_overrides(max_steps=1, effective_batch=2, per_device_batch=2)
    rec = run_pretraining(cfg, corpus=str(corpus), init="minilm", out_dir=tmp_path / "minilm", progress=False)
    assert rec["model"]["model_type"] == "bert" and rec["tokenizer"]["vocab_size"] == 30522
    assert rec["status"] == "complete" and np.isfinite(rec["final_loss"])
    head = AutoModelForTokenClassification.from_pretrained(rec["output"], num_labels=3)
    assert head.config.model_type == "bert"


@pytest.mark.slow
def test_two_processes_train_like_one_process_with_accumulation(corpus, tokenizer_dir, tmp_path):
    """4 per device x 2 processes x 1 step and 4 x 1 x 2 see the same examples, masks and dropout."""
    import json
    import os
    import subprocess
    import sys

    base = ["--config", "smoke", "--max-steps", "3", "--corpus", str(corpus)]
    env = {**os.environ, "ACCELERATE_USE_CPU": "1", "OMP_NUM_THREADS": "1"}
    one = run_pretraining(CFG.with_overrides(max_steps=3), corpus=str(corpus), out_dir=tmp_path / "one",
                          progress=False)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "-m", "medibio", "pretrain",
           *base, "--out", str(tmp_path / "two")]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    two = json.loads((tmp_path / "two" / "run.json").read_text())
    assert two["num_processes"] == 2 and two["batch"]["accumulation"] == 1 and one["batch"]["accumulation"] == 2
    assert [c["loss"] for c in two["curve"]] == pytest.approx([c["loss"] for c in one["curve"]], rel=1e-5)


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_run_lives_in_the_folder_of_its_configuration(corpus, tokenizer_dir, tmp_path, monkeypatch):
    """Without --out: the same configuration resumes (then reuses) its own folder; a changed one trains into
    a new folder and leaves the old one untouched."""
    from medibio.paths import results_root
    from medibio.pretrain.plan import plan_pretraining

    monkeypatch.setenv("MEDIBIO_RESULTS", str(tmp_path / "results"))
    run = {"corpus": str(corpus), "tokenizer_dir": tokenizer_dir, "progress": False, "tag": "t"}
    stopped = run_pretraining(CFG, stop_after=4, **run)  # killed after step 4: the step-3 checkpoint survives
    folder = plan_pretraining(CFG, str(corpus), tokenizer_dir=tokenizer_dir, tag="t").folder(results_root())
    assert stopped["status"] == "stopped" and Path(stopped["out_dir"]) == folder
    assert folder.parent == tmp_path / "results" / "pretrain" / CFG.name / "t"
    assert folder.name == stopped["config_digest"]

    resumed = run_pretraining(CFG, **run)  # same configuration, no --resume needed: its own checkpoints
    assert resumed["status"] == "complete" and resumed["resumed_from"] == [3]
    assert Path(resumed["out_dir"]) == folder and resumed["config_digest"] == stopped["config_digest"]
    before = _files(folder)
    again = run_pretraining(CFG, **run)  # finished: returned as it is, nothing trained or written
    assert again["run_id"] == resumed["run_id"] and _files(folder) == before

    changed = run_pretraining(CFG.with_overrides(learning_rate=CFG.learning_rate / 2), **run)
    assert changed["status"] == "complete" and changed["resumed_from"] == []
    assert Path(changed["out_dir"]).parent == folder.parent and Path(changed["out_dir"]) != folder
    assert changed["config_digest"] != resumed["config_digest"]
    assert _files(folder) == before, "the earlier configuration's folder was touched"


def test_resuming_an_out_folder_of_another_configuration_is_refused(full_run, corpus, tokenizer_dir):
    with pytest.raises(ResumeError, match="configuration"):
        run_pretraining(CFG.with_overrides(seed=CFG.seed + 1), corpus=str(corpus), tokenizer_dir=tokenizer_dir,
                        out_dir=Path(full_run["output"]).parent, resume=True, progress=False)


def test_the_record_carries_the_shared_provenance(full_run):
    from medibio import provenance

    env = provenance.environment()
    assert full_run["versions"] == env["versions"] and full_run["git_commit"] == env["git_commit"]
    assert full_run["device"] == env["device"] and full_run["torch_threads"] == env["torch_threads"]
    assert full_run["effective_config"]["config"]["learning_rate"] == CFG.learning_rate
