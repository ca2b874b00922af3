"""The paper's hub names load offline from a real Hugging Face cache (issue 14 §1).

A temporary ``HF_HOME`` gets MiniLM under the two BERT names and the tiny DeBERTa-v2 in the DeBERTa-v3 hub
layout (``spm.model`` only) under the two DeBERTa names. One child process, started with ``HF_HOME`` and
``HF_HUB_OFFLINE=1`` (both are read when ``huggingface_hub`` is imported), runs every head — token,
sequence, multi-label classification, regression — for one optimiser step, one whole smoke run through the
runner (4 examples per split), one SciERC span-model step and prediction, and one MLM continual-pretraining
step from each name, all through medibio's normal loading path. A name absent from the cache keeps its error.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from medibio.core.settings import Settings
from medibio.models import tiny
from medibio.models import zoo as modelzoo
from tests.support import hub_cache

REPO = Path(__file__).resolve().parents[1]
TASKS = ("BC5-chem", "GAD", "HoC", "BIOSSES")  # token, sequence, multi-label classification, regression
PROBLEM_TYPES = {"BC5-chem": None, "GAD": "single_label_classification", "HoC": "multi_label_classification",
                 "BIOSSES": "regression"}
TINY_VOCAB = 2000
# The runner's whole path (plan, fingerprint, train, evaluate, record) once per layout; the other name of
# each layout caches the same bytes, so its heads and pretraining step are enough.
RECORD_NAMES = (hub_cache.BERT_NAMES[0], hub_cache.DEBERTA_V3_NAMES[0])
MISSING = "someorg/not-in-the-cache"
SCIERC_DOCS = Path(__file__).parent / "fixtures" / "scierc" / "tiny.json"  # two hand-made SciERC abstracts
pytestmark = pytest.mark.realdata

DRIVER = r"""
import json, sys
import torch
from medibio.core.errors import ModelUnavailableError
from medibio.core.settings import Settings
from medibio.finetune import runner
from medibio.models import heads as modeling
from medibio.models import zoo as modelzoo
from medibio.pretrain.configs import get_config
from medibio.pretrain.trainer import run_pretraining
from medibio.tasks import registry
from medibio.tasks.loaders import load_blurb
from medibio.training import features

names, tasks, corpus, out, missing, tiny, record_names, scierc_file = json.loads(sys.argv[1])
settings = Settings.from_env()  # this process's boundary: data, cache and limit from its environment
from transformers import AutoTokenizer
tiny_tokenizer = AutoTokenizer.from_pretrained(tiny)  # the tiny model's own tokenizer.json
torch.set_num_threads(2)
rows = {}
examples = {task: load_blurb(task, settings.data_root, splits=["train"])["train"].select(range(2)) for task in tasks}
for name in names:
    for task in tasks:  # one optimiser step of every head, through the engine's loading and features
        spec = registry.get(task)
        tokenizer = modeling.load_tokenizer(name, spec.problem)
        model = modeling.build_model(spec, name, dropout=0.1, seed=0)
        enc = features.encode(examples[task], spec, tokenizer, 64)
        batch = features.Collator(tokenizer, spec.problem)([enc[i] for i in range(len(enc))])
        batch.pop("index")
        head = [p for n, p in model.named_parameters() if n in modeling.head_parameter_names(model)]
        before = [p.detach().clone() for p in head]
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
        loss = model(**batch).loss
        loss.backward()
        optimizer.step()
        rows[name + "|" + task] = {
            "loss": float(loss), "model_type": model.config.model_type, "problem_type": model.config.problem_type,
            "num_labels": model.config.num_labels, "head_moved": all(not torch.equal(a, b.detach())
                                                                     for a, b in zip(before, head)),
            "tokenizer": type(tokenizer).__name__, "vocab": len(tokenizer),
            "same_ids_as_tokenizer_json": tokenizer(["Aspirin-induced COX-2 inhibition in HEK293 cells."])["input_ids"]
            == tiny_tokenizer(["Aspirin-induced COX-2 inhibition in HEK293 cells."])["input_ids"]}
    if name in record_names:
        # the whole runner path once per name: plan, fingerprint, train, evaluate, record
        (rec,) = runner.run_finetune("BIOSSES", name, seeds=1, profile="smoke", config_overrides={"epochs": 1},
                                     settings=settings.replace(results_root=out + "/results"))
        rows[name + "|record"] = {"status": rec.status, "hash": rec.model["hash"], "model_type": rec.model["model_type"],
                                  "test": rec.test, "train_examples": rec.train_examples, "tag": rec.model["tag"]}
    # the SciERC span model from the hub name: the runner's loading path, one optimiser step, one prediction
    from medibio.tasks.spec import Problem
    from medibio.scierc import runner as scierc_runner
    from medibio.scierc.model import collate, featurize
    from medibio.tasks import scierc as scierc_data
    plan = scierc_runner.plan_run(name, 1, "smoke", settings=settings)
    span_model = scierc_runner._build(plan.job, modelzoo.resolve(name, settings.cache_root),
                                      ("ner", "relation", "coref"), typed=False)
    span_tokenizer = modeling.load_tokenizer(name, Problem.TOKEN)
    docs = scierc_data.read_documents(scierc_file)
    feats = featurize(docs, span_tokenizer, plan.job.config)
    batch = collate(feats, span_tokenizer.pad_token_id)
    heads = span_model.head_parameters()
    before = [p.detach().clone() for p in heads]
    optimizer = torch.optim.AdamW(span_model.parameters(), lr=1e-3)
    span_model.train()
    loss = span_model(batch)["loss"]
    loss.backward()
    optimizer.step()
    predictions = span_model.predict(batch)
    rows[name + "|scierc"] = {
        "loss": float(loss), "model_type": span_model.encoder.config.model_type,
        "head_moved": all(not torch.equal(a, b.detach()) for a, b in zip(before, heads)),
        "lost_words": sum(f.lost_words for f in feats),
        "spans": [len(f.spans) for f in feats],
        "all_spans": [len(scierc_data.enumerate_spans(d, plan.job.config.max_span_width)) for d in docs],
        "predicted": [p["doc_key"] for p in predictions],
        "fields": sorted(predictions[0])}
    cfg = get_config("smoke").with_overrides(max_steps=1, effective_batch=2, per_device_batch=2)
    rec = run_pretraining(cfg, corpus=corpus, init=name, progress=False,
                          settings=settings.replace(results_root=out + "/pretrain"))
    rows[name + "|pretrain"] = {"status": rec.status, "loss": rec.details["final_loss"],
                                "model_type": rec.model["model_type"],
                                "vocab": rec.details["tokenizer"]["vocab_size"]}
try:
    modelzoo.load_config(missing)
    rows["missing"] = "loaded"
except ModelUnavailableError as exc:
    rows["missing"] = str(exc)
print("ROWS " + json.dumps(rows))
"""


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory, session_settings: Settings,
        data_root: Path) -> tuple[dict[str, Path], dict]:
    base = tmp_path_factory.mktemp("hub")
    snapshots = hub_cache.make_hub_cache(base / "hf", cache_root=session_settings.cache_root)
    corpus = base / "corpus.txt"
    words = ["the", "patient", "kidney", "insulin", "glucose", "protein", "receptor", "expression", "tumour",
             "cells", "therapy", "dose"]
    corpus.write_text("\n\n".join(" ".join(words[(i + j) % len(words)] for j in range(40)) + "."
                                  for i in range(40)) + "\n", encoding="utf-8")
    env = {**os.environ, "HF_HOME": str(base / "hf"), "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO),
           "MEDIBIO_CACHE": str(base / "cache"), "MEDIBIO_DATA": str(data_root), "MEDIBIO_LIMIT": "4",
           "TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": "2"}
    env.pop("HF_HUB_CACHE", None)
    env.pop("TRANSFORMERS_CACHE", None)
    args = json.dumps([list(hub_cache.HUB_NAMES), list(TASKS), str(corpus), str(base / "out"), MISSING,
                       str(tiny.build(session_settings.cache_root)), list(RECORD_NAMES), str(SCIERC_DOCS)])
    done = subprocess.run([sys.executable, "-c", DRIVER, args], env=env, capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("ROWS "))
    return snapshots, json.loads(line[5:])


def test_cache_has_the_hub_layout(hub: tuple[dict[str, Path], dict]) -> None:
    snapshots, _ = hub
    assert set(snapshots) == set(hub_cache.HUB_NAMES)
    for name, snapshot in snapshots.items():
        repo = hub_cache.repo_folder(snapshot.parents[3], name)
        assert snapshot.parent.parent == repo and repo.name == "models--" + name.replace("/", "--")
        assert (repo / "refs" / "main").read_text() == snapshot.name and len(snapshot.name) == 40
        for link in snapshot.iterdir():
            assert link.is_symlink() and link.resolve().parent == (repo / "blobs").resolve()
    for name in hub_cache.DEBERTA_V3_NAMES:
        files = sorted(p.name for p in snapshots[name].iterdir())
        assert files == ["config.json", "model.safetensors", "spm.model", "tokenizer_config.json"]


@pytest.mark.parametrize("name", hub_cache.HUB_NAMES)
@pytest.mark.parametrize("task", list(TASKS))
def test_every_head_steps_from_the_hub_name(hub: tuple[dict[str, Path], dict], name: str, task: str) -> None:
    _, rows = hub
    row = rows[f"{name}|{task}"]
    deberta = name in hub_cache.DEBERTA_V3_NAMES
    assert row["model_type"] == ("deberta-v2" if deberta else "bert")
    assert row["problem_type"] == PROBLEM_TYPES[task] and row["loss"] == row["loss"] and row["loss"] > 0
    assert row["head_moved"], "the optimiser step left the task head unchanged"
    if deberta:  # the fast tokenizer was converted from spm.model alone, with the tiny model's vocabulary
        assert row["tokenizer"].startswith("DebertaV2Tokenizer") and row["vocab"] == TINY_VOCAB
        assert row["same_ids_as_tokenizer_json"]
    else:
        assert row["vocab"] == 30522


@pytest.mark.parametrize("name", RECORD_NAMES)
def test_the_runner_records_the_cached_model(hub: tuple[dict[str, Path], dict], name: str) -> None:
    snapshots, rows = hub
    row = rows[f"{name}|record"]
    assert row["status"] == "ok" and row["train_examples"] == 4 and row["test"]["n"] == 4
    assert row["tag"] == name.replace("/", "__")
    assert row["model_type"] == ("deberta-v2" if name in hub_cache.DEBERTA_V3_NAMES else "bert")
    # the record names the exact cached files: the same bytes as the local model they came from
    assert row["hash"] == modelzoo.fingerprint(snapshots[name])
    if name in hub_cache.BERT_NAMES:
        assert row["hash"] == modelzoo.fingerprint(modelzoo.minilm_path())


@pytest.mark.parametrize("name", hub_cache.HUB_NAMES)
def test_the_scierc_span_model_steps_and_predicts_from_the_hub_name(hub: tuple[dict[str, Path], dict],
                                                                    name: str) -> None:
    _, rows = hub
    row = rows[f"{name}|scierc"]
    assert row["model_type"] == ("deberta-v2" if name in hub_cache.DEBERTA_V3_NAMES else "bert")
    assert row["loss"] == row["loss"] and row["loss"] > 0
    assert row["head_moved"], "the optimiser step left the span heads unchanged"
    # the hub tokenizer (spm.model alone for the DeBERTa-v3 layout) maps every word: every span is a candidate
    assert row["lost_words"] == 0 and row["spans"] == row["all_spans"]
    assert row["predicted"] == ["D1", "D2"] and row["fields"] == ["clusters", "doc_key", "entities", "relations"]


@pytest.mark.parametrize("name", hub_cache.HUB_NAMES)
def test_continual_pretraining_steps_from_the_hub_name(hub: tuple[dict[str, Path], dict], name: str) -> None:
    _, rows = hub
    row = rows[f"{name}|pretrain"]
    assert row["status"] == "ok" and row["loss"] == row["loss"] and row["loss"] > 0  # a finished run
    if name in hub_cache.DEBERTA_V3_NAMES:
        assert (row["model_type"], row["vocab"]) == ("deberta-v2", TINY_VOCAB)
    else:
        assert (row["model_type"], row["vocab"]) == ("bert", 30522)


def test_a_name_absent_from_the_cache_keeps_its_plain_error(hub: tuple[dict[str, Path], dict]) -> None:
    _, rows = hub
    message = rows["missing"]
    assert message.startswith(f"config of {MISSING!r}: not a local folder")
    assert f"huggingface-cli download {MISSING}" in message


def test_unknown_names_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no local stand-in"):
        hub_cache.make_hub_cache(tmp_path, ["org/other"])
