"""SciERC runs end to end on the smoke profile: a record with every field the chapter needs, reuse only for
an equal configuration, staleness listing, the CLI, and resume after a killed run."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from collections import Counter

import pytest

from medibio.results import listing
from medibio.results import scierc as report
from medibio.runs import records as rec
from medibio.scierc import runner
from medibio.tasks import scierc as data

pytestmark = [pytest.mark.realdata, pytest.mark.slow]

FAST = {"max_train_docs": 4, "max_dev_docs": 2, "max_test_docs": 3, "epochs": 2}


@pytest.fixture()
def settings(settings, data_root):
    """This test's results folder and the real data root."""
    return settings.replace(data_root=data_root)


def test_smoke_run_writes_a_complete_record(settings, data_root) -> None:
    tmp_path = settings.results_root
    [record] = runner.run_scierc(profile="smoke", overrides=FAST, settings=settings)
    plan = runner.plan_run(profile="smoke", overrides=FAST, settings=settings)
    path = plan.key.path(tmp_path)
    assert path.is_file() and record.kind == "scierc" and record.variant == "joint"
    assert str(path.relative_to(tmp_path)).startswith("scierc/smoke/tiny-deberta/joint/SciERC/")
    assert [e["epoch"] for e in record.dev_curve] == [1, 2] and record.best_epoch in (1, 2)
    for short in ("ner", "rel", "relplus", "coref"):
        for part in ("p", "r", "f1"):
            assert 0.0 <= record.test[f"{short}_{part}"] <= 100.0
    assert record.train_examples == 4 and record.eval_examples == 3
    assert record.wall_time_s > 0 and record.train_examples_per_s > 0 and record.peak_memory_mb > 0
    assert record.versions and "torch" in record.versions and record.config["scierc"]["epochs"] == 2
    assert any("NOT an official score" in n for n in record.notes)
    predictions = [json.loads(line) for line in record.predictions_file(tmp_path).read_text().splitlines()]
    assert len(predictions) == 3 and set(predictions[0]) == {"doc_key", "entities", "relations", "clusters"}

    # the same request reuses the record; a different configuration trains into its own
    [again] = runner.run_scierc(profile="smoke", overrides=FAST, settings=settings)
    assert again.created == record.created
    other = runner.plan_run(profile="smoke", overrides={**FAST, "epochs": 1}, settings=settings)
    assert other.key.config_digest != plan.key.config_digest
    assert rec.find_record(tmp_path, other.key) is None

    listed = listing.list_records(tmp_path, settings=settings, kinds=("scierc",))
    assert list(listed["freshness"]) == ["current"]
    table = report.scierc_table(tmp_path, "smoke")
    assert list(table["task"]) == ["NER", "REL", "REL+", "Coref"] and set(table["seeds"]) == {1}
    ner, rel = report.breakdown([record], tmp_path, data_root)
    assert set(ner.columns) == {"F1", "± (sd)", "gold"}
    # one row per entity / relation type of the scored test documents (gold or predicted), gold counted right
    gold = {d.doc_key: d for d in data.load_split("test", data_root)}
    docs = [gold[p["doc_key"]] for p in predictions]
    gold_types = Counter(e[2] for d in docs for e in d.all_entities())
    predicted_types = {e[2] for p in predictions for e in p["entities"]}
    assert set(ner.index) == set(gold_types) | predicted_types
    assert {t: int(ner.loc[t, "gold"]) for t in ner.index} == {t: gold_types.get(t, 0) for t in ner.index}
    gold_relations = Counter(r[4] for d in docs for r in d.all_relations())
    assert set(gold_relations) <= set(rel.index)
    assert all(int(rel.loc[t, "gold"]) == n for t, n in gold_relations.items())
    assert ((ner["F1"] >= 0) & (ner["F1"] <= 100)).all()

    # provenance: the commit the run was made from, and what its wall time and peak memory cover
    assert re.fullmatch(r"[0-9a-f]{40}(\+dirty)?", record.git_commit), record.git_commit
    training_s = record.hyperparameters["epochs"] * record.train_examples / record.train_examples_per_s
    assert record.wall_time_s > training_s  # data preparation, model loading and evaluation are inside
    assert runner.CPU_MEMORY_NOTE in record.notes


def test_pipeline_mode_trains_two_models(settings) -> None:
    [record] = runner.run_scierc(profile="smoke", overrides={**FAST, "mode": "pipeline", "epochs": 1},
                                 settings=settings)
    assert record.variant == "pipeline"
    assert {e["part"] for e in record.dev_curve} == {"entity", "relation"}  # the curves of both models
    assert sum("pipeline" in n for n in record.notes) == 2


KILL_IN_SECOND_SEED = textwrap.dedent("""
    import os, signal, sys
    from medibio.core.settings import Settings
    from medibio.scierc import runner

    ends = []

    def kill(event, epoch, **_):
        ends.append(epoch)
        if len(ends) == 3:  # seed 1 has two epochs: this is seed 2's first
            os.kill(os.getpid(), signal.SIGKILL)

    settings = Settings.from_env(results_root=sys.argv[1], data_root=sys.argv[2])
    runner.run_scierc(profile="smoke", seeds=[1, 2], overrides=OVERRIDES, callbacks=[kill], settings=settings)
""").replace("OVERRIDES", repr(FAST))


def test_resume_after_kill(settings, data_root) -> None:
    tmp_path = settings.results_root
    killed = subprocess.run([sys.executable, "-c", KILL_IN_SECOND_SEED, str(tmp_path), str(data_root)],
                            capture_output=True, text=True, timeout=600)
    assert killed.returncode == -9, killed.stderr[-2000:]
    keys = [runner.plan_run(seed=s, profile="smoke", overrides=FAST, settings=settings).key for s in (1, 2)]
    first = rec.find_record(tmp_path, keys[0])
    assert first is not None and rec.find_record(tmp_path, keys[1]) is None
    assert keys[1].lock_path(tmp_path).is_file()  # the killed run's lock is left behind

    args = [sys.executable, "-m", "medibio", "scierc", "train", "--profile", "smoke", "--seeds", "1,2",
            "--results-root", str(tmp_path), "--data-root", str(data_root), "--json",
            "--max-train-docs", "4", "--max-dev-docs", "2", "--max-test-docs", "3", "--epochs", "2"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout)
    assert [r["seed"] for r in out] == [1, 2]
    assert "reused" in done.stderr and "stale lock" in done.stderr
    assert out[0]["created"] == first.created  # seed 1 was not trained again
    assert not list(tmp_path.rglob("*.lock"))


def test_train_layers_freezes_the_lower_encoder_and_enters_the_digest(settings) -> None:
    """``train_layers=1``: only the tiny DeBERTa's top layer (and the heads) learn; a note says so."""
    from medibio.models import zoo
    from medibio.scierc.presets import SciercConfig

    plan = runner.plan_run(profile="smoke", overrides={**FAST, "train_layers": 1}, settings=settings)
    assert plan.key.config_digest != runner.plan_run(profile="smoke", overrides=FAST,
                                                     settings=settings).key.config_digest
    source = zoo.resolve(plan.job.model, settings.cache_root)
    net = runner._build(plan.job, source, ("ner", "relation", "coref"), typed=False)
    trainable = {n for n, p in net.named_parameters() if p.requires_grad}
    assert not any(n.startswith("encoder.embeddings.") or n.startswith("encoder.encoder.layer.0.") for n in trainable)
    assert any(n.startswith("encoder.encoder.layer.1.") for n in trainable)
    assert any(not n.startswith("encoder.") for n in trainable)
    assert net.split is not None  # the frozen layers run once per document window (medibio.models.split)
    every_step = runner.plan_run(profile="smoke", overrides={**FAST, "train_layers": 1, "reuse_frozen_layers": False},
                                 settings=settings)
    assert every_step.key.config_digest != plan.key.config_digest
    assert runner._build(every_step.job, source, ("ner",), typed=False).split is None
    assert SciercConfig().train_layers is None  # full fine-tuning unless a profile says otherwise
    [record] = runner.run_scierc(profile="smoke", overrides={**FAST, "train_layers": 1, "epochs": 1},
                                 settings=settings)
    assert any("all but the top 1 layers frozen; they run once per document window" in n for n in record.notes)


def test_two_processes_under_accelerate_launch_write_one_record(settings, data_root) -> None:
    """``accelerate launch --multi_gpu --num_processes 2 -m medibio scierc train`` (gloo on CPU): both
    processes train on their share of the documents, only the main one writes, and the record says x2."""
    from medibio.runs.launch import free_port

    tmp_path = settings.results_root
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
           "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
           "--main_process_port", str(free_port()), "-m", "medibio", "scierc", "train", "--profile", "smoke",
           "--max-train-docs", "4", "--max-dev-docs", "2", "--max-test-docs", "3", "--epochs", "1",
           "--results-root", str(tmp_path), "--data-root", str(data_root)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"},
                          timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    plan = runner.plan_run(profile="smoke", overrides={**FAST, "epochs": 1}, settings=settings)
    record = rec.find_record(tmp_path, plan.key)  # the same request planned here finds what the launch wrote
    assert record is not None and record.ok and record.num_processes == 2 and record.device.endswith("x2")
    assert len(record.predictions_file(tmp_path).read_text().splitlines()) == 3
    assert len(list(tmp_path.rglob("seed1.json"))) == 1


def test_the_span_models_version_enters_the_digest(settings, monkeypatch) -> None:
    """A change of what the span model computes (``SPAN_MODEL``) gives every SciERC run a new identity."""
    before = runner.plan_run(profile="smoke", overrides=FAST, settings=settings)
    assert before.payload["span_model"] == runner.SPAN_MODEL
    monkeypatch.setattr(runner, "SPAN_MODEL", runner.SPAN_MODEL + 1)
    assert runner.plan_run(profile="smoke", overrides=FAST, settings=settings).key.config_digest != \
        before.key.config_digest
