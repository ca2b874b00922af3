"""End to end on the real data with the smoke profile: every task type, model selection on dev, stability
flags wired into the loop, run records and prediction files."""

from __future__ import annotations

import json
import math

import pytest
import torch

from medibio.finetune import runner
from medibio.runs import protocol
from medibio.runs import records as rec
from medibio.tasks import loaders, metrics, predictions
from medibio.training import features
from medibio.training import loop as trainer

pytestmark = pytest.mark.realdata

TASKS = ["NCBI-disease", "ChemProt", "GAD", "PubMedQA", "HoC", "BIOSSES"]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    return tmp_path_factory.mktemp("ft-results")


@pytest.fixture(scope="module")
def shared(results, session_settings, data_root):
    """Settings whose results folder the tests of this module share."""
    return session_settings.replace(results_root=results, data_root=data_root)


def _at(settings, results_root):
    return settings.replace(results_root=results_root)


def _read_jsonl(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize("task", TASKS)
def test_every_task_type_end_to_end(task, results, shared, data_root):
    [record] = runner.run_finetune(task, profile="smoke", settings=shared)
    path = runner.plan_run(task, profile="smoke", settings=shared).key.path(results)
    assert path == record.path(results) and rec.read_record(path).run_id == record.run_id
    assert record.config_digest == path.parent.name and record.request["dataset"] == task
    assert record.ok and record.dataset == task and record.model["model_type"] == "deberta-v2"
    assert record.model["hash"].startswith("sha256:") and record.model["parameters"] > 0
    assert [e["epoch"] for e in record.dev_curve] == [1, 2]
    best = max(record.dev_curve, key=lambda e: e["dev"]["score"])  # first of equals, like the trainer
    assert record.best_epoch == best["epoch"] and record.score_dev == best["dev"]["score"]
    for key in ("learning_rate", "batch_size", "epochs", "max_length", "warmup_ratio", "per_device_batch_size"):
        assert key in record.hyperparameters
    assert record.wall_time_s > 0 and record.train_examples_per_s > 0 and record.peak_memory_mb > 0

    # predictions: the scorer's format, in test order, and they reproduce the recorded test score
    pred_file = record.predictions_file(results)
    rows = _read_jsonl(pred_file)
    test = loaders.load_blurb(task, data_root, splits="test")["test"]
    kept = features.subsample(test, 32, protocol.SUBSET_SEED)
    assert [r["id"] for r in rows] == kept["id"] and record.eval_examples == len(kept)
    parsed = predictions.read_predictions(pred_file, task)  # validates types per dataset
    assert set(parsed) == set(kept["id"])
    gold = features.references(kept, features.Problem(record.problem))
    rescored = metrics.evaluate(task, gold, [r["prediction"] for r in rows])
    assert rescored["score"] == pytest.approx(record.score_test)
    if task == "HoC":  # the multi-label cut-off is chosen on dev and recorded
        assert any("decision threshold" in n for n in record.notes)
        assert all("threshold" in e["dev"] for e in record.dev_curve)
    if len(test) > 32:
        assert any("NOT an official score" in n for n in record.notes)
    else:  # BIOSSES: the whole official test set, so the BLURB scorer accepts the file as is
        assert predictions.score_file(pred_file, task, data_root=data_root)["score"] == pytest.approx(
            record.score_test)


def test_pico_without_train_split_is_recorded_as_skipped(results, shared, data_root):
    assert "train" not in loaders.available_splits("EBM-PICO", data_root)
    [record] = runner.run_finetune("EBM-PICO", profile="smoke", settings=shared)
    assert record.status == "skipped" and "train split absent" in record.reason
    assert record.score_test is None and record.score_dev is None and record.predictions is None
    stored = rec.read_record(runner.plan_run("EBM-PICO", profile="smoke", settings=shared).key.path(results))
    assert stored.status == "skipped" and not stored.test
    assert not list(stored.path(results).parent.glob("*.jsonl"))

    from medibio.results import aggregate

    table = aggregate.results_table([stored])
    row = table[table["row"] == "EBM-PICO"].iloc[0]
    assert "skipped" in row["note"] and "train split absent" in row["note"]


def _checksum(model) -> float:
    return float(sum(p.detach().double().sum() for p in model.parameters()))


def test_model_selection_uses_dev_not_the_last_epoch(settings, data_root, monkeypatch):
    """Scripted dev scores 50, 80, 60: epoch 2 wins and the test predictions come from its weights."""
    scripted = iter([50.0, 80.0, 60.0])
    seen: dict[str, float] = {}
    original = trainer.Evaluator.evaluate

    def fake_evaluate(self, model, threshold=0.5):
        if self.split == "dev":
            _, preds, unseen = original(self, model, threshold)
            return {"score": next(scripted)}, preds, unseen
        seen["test"] = _checksum(model)
        return original(self, model, threshold)

    monkeypatch.setattr(trainer.Evaluator, "evaluate", fake_evaluate)
    per_epoch: dict[int, float] = {}

    def on_epoch(event, epoch, model, **_):
        per_epoch[epoch] = _checksum(model)

    [record] = runner.run_finetune("BIOSSES", profile="smoke", settings=settings,
                                   config_overrides={"epochs": 3}, callbacks=[on_epoch])
    assert [e["dev"]["score"] for e in record.dev_curve] == [50.0, 80.0, 60.0]
    assert record.best_epoch == 2 and record.score_dev == 80.0
    assert seen["test"] == pytest.approx(per_epoch[2], rel=0, abs=1e-9)
    assert not math.isclose(per_epoch[2], per_epoch[3], rel_tol=0, abs_tol=1e-9)


def test_existing_record_is_skipped_and_force_reruns(settings, data_root):
    [first] = runner.run_finetune("BIOSSES", profile="smoke", settings=settings)
    path = first.path(settings.results_root)
    stamp = path.stat().st_mtime_ns
    [again] = runner.run_finetune("BIOSSES", profile="smoke", settings=settings)
    assert path.stat().st_mtime_ns == stamp and again.created == first.created
    [forced] = runner.run_finetune("BIOSSES", profile="smoke", settings=settings, force=True)
    assert path.stat().st_mtime_ns != stamp and rec.read_record(path).created == forced.created


def test_run_interrupted_mid_training_leaves_no_record(settings, data_root):
    def crash(event, epoch, **_):
        if epoch == 1:
            raise KeyboardInterrupt  # what a notebook "interrupt kernel" does

    with pytest.raises(KeyboardInterrupt):
        runner.run_finetune("BIOSSES", profile="smoke", settings=settings, callbacks=[crash])
    root = settings.results_root
    key = runner.plan_run("BIOSSES", profile="smoke", settings=settings).key
    assert rec.find_record(root, key) is None
    assert not key.folder(root).exists() or not any(key.folder(root).iterdir())  # lock released too
    [record] = runner.run_finetune("BIOSSES", profile="smoke", settings=settings)
    assert record.ok and record.path(root).is_file()


# --- stability flags, wired through the config into the loop -----------------------------------------

def _tiny_model():
    from medibio.models import heads as modeling
    from medibio.tasks import registry

    torch.manual_seed(0)
    return modeling.build_model(registry.get("BIOSSES"), "tiny-deberta")


def test_stability_flags_reach_the_optimiser_and_model():
    from medibio.training import stability
    from medibio.training.config import FinetuneConfig

    model = _tiny_model()
    opt, notes = trainer.build_optimizer(model, FinetuneConfig())
    assert isinstance(opt, torch.optim.AdamW) and len({g["lr"] for g in opt.param_groups}) == 1
    assert notes == []

    model = _tiny_model()
    opt, notes = trainer.build_optimizer(model, FinetuneConfig(learning_rate=1e-4, llrd=0.5))
    rates = {g["name"].split("/")[0]: g["lr"] for g in opt.param_groups}
    assert rates["head"] == 1e-4 and rates["layer.1"] == 1e-4 and rates["layer.0"] == 5e-5
    assert rates["embeddings"] == pytest.approx(2.5e-5)

    model = _tiny_model()
    opt, notes = trainer.build_optimizer(model, FinetuneConfig(bias_correction=False))
    assert isinstance(opt, stability.AdamWNoBiasCorrection)

    model = _tiny_model()
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    opt, notes = trainer.build_optimizer(model, FinetuneConfig(reinit_top=1, freeze_lower=True))
    changed = {n for n, p in model.named_parameters() if not torch.equal(before[n], p)}
    assert changed and all(".layer.1." in n for n in changed)  # only the top layer was re-drawn
    frozen = {n for n, p in model.named_parameters() if not p.requires_grad}
    assert any("embeddings" in n for n in frozen) and any(".layer.0." in n for n in frozen)
    assert not any(".layer.1." in n for n in frozen)
    trained = {id(p) for g in opt.param_groups for p in g["params"]}
    assert all(id(p) not in trained for n, p in model.named_parameters() if n in frozen)
    assert any("re-initialised" in n for n in notes) and any("frozen" in n for n in notes)


def test_freeze_lower_and_longer_training_in_a_real_run(settings, data_root):
    weights: dict[int, dict[str, torch.Tensor]] = {}

    def keep(event, epoch, model, **_):
        weights[epoch] = {n: p.detach().clone() for n, p in model.named_parameters()}

    [record] = runner.run_finetune("BIOSSES", profile="smoke", settings=settings,
                                   config_overrides={"freeze_lower": True, "longer_training": 2.0, "epochs": 1},
                                   callbacks=[keep])
    assert record.variant == "freeze+long2"
    assert len(record.dev_curve) == 2  # 1 epoch x 2
    base = _tiny_model()
    start = dict(base.named_parameters())
    emb = next(n for n in start if "embeddings.word_embeddings" in n)
    top = next(n for n in start if ".layer.1.attention" in n and n.endswith("weight"))
    assert torch.equal(weights[2][emb], start[emb].detach())  # frozen: still the pretrained tensor
    assert not torch.equal(weights[2][top], start[top].detach())  # upper half trained
    assert any("freeze" in n for n in record.notes)


def test_class_weighted_loss_in_a_real_run(settings, tmp_path, data_root, monkeypatch):
    from collections import Counter

    from medibio.tasks import registry

    calls = []
    real = torch.nn.functional.cross_entropy

    def spy(logits, target, weight=None, **kw):
        calls.append(weight)
        return real(logits, target, weight=weight, **kw)

    monkeypatch.setattr(torch.nn.functional, "cross_entropy", spy)
    [plain] = runner.run_finetune("DDI", profile="smoke", settings=_at(settings, tmp_path / "a"))
    assert not any(w is not None for w in calls)
    [weighted] = runner.run_finetune("DDI", profile="smoke", settings=_at(settings, tmp_path / "b"),
                                     config_overrides={"class_weighting": "balanced"})
    assert weighted.hyperparameters["class_weighting"] == "balanced"
    used = [w for w in calls if w is not None]
    assert used, "the weighted loss was never called"
    # the weights are 1/count over the smoke training subset, mean 1 over the classes present
    train = features.subsample(loaders.load_blurb("DDI", data_root, splits="train")["train"], 32,
                               protocol.SUBSET_SEED)
    labels = features.label_list(registry.get("DDI"))
    counts = Counter(train["label"])
    expected = features.class_weights([labels.index(x) for x in train["label"]], len(labels), "balanced")
    assert used[0].tolist() == pytest.approx(expected)
    rarest = min(counts, key=counts.get)
    assert expected[labels.index(rarest)] == max(expected)
    assert any(n.startswith("class-weighted loss (balanced)") for n in weighted.notes)
    assert weighted.dev_curve[0]["train_loss"] != pytest.approx(plain.dev_curve[0]["train_loss"])

    [reg] = runner.run_finetune("BIOSSES", profile="smoke", settings=_at(settings, tmp_path / "c"),
                                config_overrides={"class_weighting": "sqrt"})
    assert any("ignored" in n for n in reg.notes)
