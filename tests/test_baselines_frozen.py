"""Frozen-encoder baselines on the smoke profile (tiny DeBERTa): every task type scores, records are reused
only for an identical configuration, and the cosine baseline agrees with a hand computation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from medibio.baselines import frozen
from medibio.models import zoo
from medibio.runs import records as rec
from medibio.tasks.spec import Problem

# One dataset per method and problem type: regression (cosine), RE, multi-label, QA pairs, NER, IFT STS.
SMOKE_TASKS = ("BIOSSES", "ChemProt", "GAD", "HoC", "PubMedQA", "NCBI-disease", "STS-B")


@pytest.fixture(scope="module")
def shared(session_settings, data_root, tmp_path_factory):
    """The settings of the module's shared results folder (the real data root)."""
    return session_settings.replace(data_root=data_root, results_root=tmp_path_factory.mktemp("frozen"))


@pytest.fixture(scope="module")
def smoke_table(shared):
    return shared.results_root, frozen.baselines("smoke", list(SMOKE_TASKS), settings=shared)


def test_every_task_type_gives_a_finite_score(smoke_table):
    _, table = smoke_table
    assert list(table["dataset"]) == list(SMOKE_TASKS)
    assert set(table["method"]) == {"cosine", "probe", "token-probe"}
    for row in table.to_dict("records"):
        assert row["status"] == "ok", row
        assert math.isfinite(row["frozen"]), row
        assert row["ci95_low"] <= row["frozen"] + 1e-9 and row["frozen"] <= row["ci95_high"] + 1e-9, row
        assert not row["reused"]
    probes = table[table["method"] != "cosine"]
    assert (probes["train_examples"] == 32).all()  # the smoke preset's training cap, not the whole split
    assert (table.loc[table["method"] == "cosine", "train_examples"] == 0).all()


def test_records_are_frozen_kind_with_predictions_that_rescore(smoke_table, shared):
    from medibio.tasks.predictions import read_predictions

    root, table = smoke_table
    for name in ("ChemProt", "NCBI-disease"):
        plan = frozen.plan_frozen(name, profile="smoke", settings=shared)
        record = rec.find_record(root, plan.key)
        assert record is not None and record.kind == "frozen"
        assert record.config_digest == table.set_index("dataset").loc[name, "digest"]
        preds = read_predictions(record.predictions_file(root), name)
        assert len(preds) == record.eval_examples == 32


def test_probe_uses_the_fine_tuning_subset(settings, data_root):
    """The probe's training rows are those the fine-tuning runner picks (same caps, same seed)."""
    from medibio.runs import protocol
    from medibio.tasks.loaders import load_blurb
    from medibio.training import config as presets
    from medibio.training import features

    plan = frozen.plan_frozen("GAD", profile="smoke", settings=settings)
    cfg = presets.preset("GAD", "smoke")
    train = load_blurb("GAD", data_root, splits="train")["train"]
    expected = features.subsample(train, cfg.max_train_examples, protocol.SUBSET_SEED)["id"]
    assert frozen._splits(plan.job, data_root)["train"]["id"] == expected
    assert plan.job.caps["max_train_examples"] == cfg.max_train_examples


def test_second_call_reuses_and_a_changed_config_does_not(smoke_table, shared):
    root, table = smoke_table
    again = frozen.baselines("smoke", "GAD", settings=shared)
    assert bool(again.loc[0, "reused"])
    assert again.loc[0, "digest"] == table.set_index("dataset").loc["GAD", "digest"]
    assert again.loc[0, "frozen"] == table.set_index("dataset").loc["GAD", "frozen"]
    capped = frozen.baselines("smoke", "GAD", overrides={"max_train_examples": 16}, settings=shared)
    assert not bool(capped.loc[0, "reused"])
    assert capped.loc[0, "digest"] != again.loc[0, "digest"]
    assert capped.loc[0, "train_examples"] == 16
    probed = frozen.baselines("smoke", "GAD", probe=frozen.ProbeSettings(c_grid=(1.0,)), settings=shared)
    assert not bool(probed.loc[0, "reused"])
    assert len(set(probed["digest"]) | set(capped["digest"]) | set(again["digest"])) == 3


def test_listing_knows_frozen_records(smoke_table, shared):
    from medibio.results.listing import list_records

    root, _ = smoke_table
    listed = list_records(root, settings=shared, kinds=("frozen",))
    assert len(listed) >= len(SMOKE_TASKS)
    assert set(listed["freshness"]) == {"current"}


def test_cosine_hand_case():
    a = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 0.0], [2.0, 0.0]])
    b = np.array([[1.0, 0.0], [-1.0, 1.0], [1.0, 0.0], [-3.0, 0.0]])
    assert frozen.cosine_similarity(a, b).tolist() == pytest.approx([1.0, 0.0, 0.0, -1.0])


def test_identical_sentences_have_cosine_one(session_settings):
    """Encoding the same sentence twice gives cosine 1; a different one less (tiny DeBERTa, fp32)."""
    import datasets

    from medibio.tasks import registry

    spec = registry.get("BIOSSES")
    encoder = frozen.load_encoder(zoo.resolve("tiny-deberta", session_settings.cache_root))
    rows = datasets.Dataset.from_dict({"id": ["a", "b", "c"], "label": [4.0, 4.0, 0.0],
                                       "text": ["Aspirin inhibits platelet aggregation."] * 2
                                       + ["The tumour grew in mice."]})
    emb = encoder.sentence_embeddings(rows, spec, 64, 8)
    cos = frozen.cosine_similarity(emb[[0, 0]], emb[[1, 2]])
    assert cos[0] == pytest.approx(1.0, abs=1e-6)
    assert cos[1] < 1.0 - 1e-4


def test_unknown_and_unsupported_tasks_are_named():
    with pytest.raises(KeyError, match="Nope"):
        frozen.task_names("Nope")
    with pytest.raises(ValueError, match="SICK-E"):
        frozen.plan_frozen("SICK-E", profile="smoke")
    assert frozen.task_names("RE,STS-B") == ["ChemProt", "DDI", "GAD", "STS-B"]
    assert frozen.METHODS[Problem.TOKEN] == "token-probe"


def test_cli_prints_the_table(smoke_table, data_root):
    from typer.testing import CliRunner

    from medibio.cli.main import app

    root, _ = smoke_table
    result = CliRunner().invoke(app, ["blurb", "frozen", "--profile", "smoke", "--task", "GAD", "--results-root",
                                      str(root), "--data-root", str(data_root), "--json"])
    assert result.exit_code == 0, result.output
    assert '"reused":true' in result.output.replace(" ", "")
    bad = CliRunner().invoke(app, ["blurb", "frozen", "--task", "Nope"])
    assert bad.exit_code != 0 and "Nope" in bad.output


def test_mean_pooling_head_pools_like_the_frozen_baseline():
    """pooling="mean" (the BIOSSES fix) feeds the head the masked mean the cosine baseline uses."""
    import torch

    from medibio.models import heads as modeling
    from medibio.models import zoo as modelzoo
    from medibio.tasks import registry

    spec = registry.get("BIOSSES")
    model = modeling.build_model(spec, "minilm", 0.0, seed=1, pooling="mean").eval()
    tok = modelzoo.load_tokenizer("minilm")
    batch = tok(["a short one", "a much longer sentence with many more words in it"], padding=True,
                return_tensors="pt")
    with torch.no_grad():
        out = model.base_model(**batch)
        mask = batch["attention_mask"].unsqueeze(-1).float()
        expected = (out.last_hidden_state * mask).sum(1) / mask.sum(1)
        assert torch.allclose(out.pooler_output, expected, atol=1e-5)
        assert model(**batch).logits.shape == (2, 1)
    with pytest.raises(ValueError, match="pooling"):
        modeling.build_model(spec, "minilm", pooling="max")


def test_progress_while_encoding_and_a_finished_line_counted_as_a_run(settings, data_root, monkeypatch):
    """Encoding a test set takes minutes on the cpu profile: a bar per encoding pass, then a ✓ line with the
    score that the cell summary counts like a fine-tuning run (a reused baseline: an = line, counted reused)."""
    import re

    from medibio.core import progress

    events: list[tuple[str, dict]] = []
    status = progress.CellStatus("frozen")
    monkeypatch.setattr(status, "_show", lambda text: None)
    with progress.sink(lambda kind, info: events.append((kind, info))), progress.sink(status):
        first = frozen.baselines("smoke", "BIOSSES", settings=settings)
        frozen.baselines("smoke", "BIOSSES", settings=settings)
    bars = [info for kind, info in events if kind == "bar"]
    assert {"frozen BIOSSES dev (sentence 1)", "frozen BIOSSES test (sentence 2)"} <= {b["desc"] for b in bars}
    assert any(b["n"] == b["total"] > 0 for b in bars)  # each pass reports its end
    runs = [info for kind, info in events if kind == "run"]
    row = first.iloc[0]
    assert runs[0]["text"].startswith(f"✓ frozen cosine BIOSSES [tiny-deberta]: test {row['frozen']:.2f} "
                                      f"[{row['ci95_low']:.2f}, {row['ci95_high']:.2f}]")
    assert runs[0]["reused"] is False and runs[0]["seconds"] == row["seconds"]
    assert runs[1]["text"].startswith("= frozen cosine BIOSSES [tiny-deberta]: reused its record") and runs[1]["reused"]
    assert re.fullmatch(r"frozen: 2 runs — 1 trained now \(\d+:\d\d\), 1 reused from their records", status.summary())


def test_encoding_precision_follows_the_cpu_and_is_part_of_the_digest(settings, data_root, monkeypatch):
    """bf16 autocast where the CPU has native bf16, fp32 elsewhere; the precision used names the record."""
    from medibio.core import precision as accel

    digests = {}
    for native in (True, False):
        monkeypatch.setattr(accel, "cpu_has_bf16", lambda native=native: native)
        plan = frozen.plan_frozen("BIOSSES", profile="smoke", settings=settings)
        assert plan.payload["probe"]["precision"] == ("bf16" if native else "fp32")
        assert frozen.ProbeSettings(precision="fp32").effective_precision == "fp32"
        digests[native] = plan.key.config_digest
    assert digests[True] != digests[False]
    tiny = zoo.resolve("tiny-deberta", settings.cache_root)
    encoder = frozen.Encoder(tiny, precision="bf16")
    monkeypatch.setattr(accel, "cpu_has_bf16", lambda: True)
    split = frozen._splits(frozen.plan_frozen("BIOSSES", profile="smoke", settings=settings).job, data_root)["test"]
    spec = frozen.baseline_task("BIOSSES")
    fast = encoder.sentence_embeddings(split.remove_columns("text_pair"), spec, 64, 8)
    exact = frozen.Encoder(tiny).sentence_embeddings(split.remove_columns("text_pair"), spec, 64, 8)
    assert fast.dtype == np.float32 and np.allclose(fast, exact, atol=0.1) and not np.array_equal(fast, exact)
