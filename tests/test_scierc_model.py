"""The span model on documents that give a head nothing to score (no two entities in one sentence: 3 of
SciERC's 350 training abstracts): every loss stays connected to the graph, so a batch of such documents
trains (batch size 1, joint and pipeline) and every trainable parameter gets a gradient, as
DistributedDataParallel requires of each step; and a run with ``settings.processes=2`` goes through
``accelerate launch`` in two processes (on those documents, in pipeline mode)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from medibio.tasks import scierc as data

TINY = Path(__file__).parent / "fixtures" / "scierc" / "tiny.json"
# one word per sentence: no span pair within a sentence (no relation candidate in any mode) and, with four
# words, one coreference candidate at most besides its single gold entity
NO_PAIR = {"doc_key": "NOPAIR", "sentences": [["Parsing"], ["works"], ["."]],
           "ner": [[[0, 0, "Task"]], [], []], "relations": [[], [], []], "clusters": []}


def _doc(raw: dict) -> data.Document:
    return data.parse_document(raw, Path("hand.json"), 1)


@pytest.fixture()
def hand_root(tmp_path: Path) -> Path:
    """A data root whose training split holds two documents without any pair, D1 and D2."""
    tiny = [json.loads(line) for line in TINY.read_text().splitlines()]
    splits = {"train": [NO_PAIR, tiny[0], {**NO_PAIR, "doc_key": "NOPAIR2"}, tiny[1]], "dev": tiny,
              "test": [*tiny, NO_PAIR]}
    folder = tmp_path / "data" / "scierc"
    folder.mkdir(parents=True)
    for split, docs in splits.items():
        (folder / f"{split}.json").write_text("".join(json.dumps(d) + "\n" for d in docs))
    return tmp_path / "data"


def _model(heads: tuple[str, ...], typed: bool):
    import torch
    from transformers import AutoModel

    from medibio.core.settings import Settings
    from medibio.models import heads as modeling
    from medibio.models import zoo as modelzoo
    from medibio.scierc import presets
    from medibio.scierc.model import SpanModel
    from medibio.tasks.spec import Problem

    torch.manual_seed(0)
    cfg = presets.preset("smoke")
    tiny = modelzoo.resolve("tiny-deberta", Settings.from_env().cache_root)  # built in the session's cache
    encoder = AutoModel.from_pretrained(tiny)
    tokenizer = modeling.load_tokenizer(tiny, Problem.TOKEN)
    return SpanModel(encoder, cfg, heads, typed_relations=typed), tokenizer, cfg


@pytest.mark.parametrize(("heads", "typed"), [(("ner", "relation", "coref"), False), (("relation",), True),
                                              (("ner", "coref"), False)],
                         ids=["joint", "pipeline-relation", "pipeline-entity"])
def test_a_document_without_pairs_gives_every_parameter_a_gradient(heads, typed) -> None:
    from medibio.scierc.model import collate, featurize

    model, tokenizer, cfg = _model(heads, typed)
    doc = _doc(NO_PAIR)
    assert not model._pairs(featurize([doc], tokenizer, cfg)[0], range(3))  # truly nothing to relate
    batch = collate(featurize([doc], tokenizer, cfg), tokenizer.pad_token_id)
    model.train()
    out = model(batch)
    assert out["loss"].requires_grad
    if "relation" in heads:
        assert float(out["relation"]) == 0.0  # the zero-weighted connection adds nothing to the loss
    if heads == ("relation",):
        assert float(out["loss"].detach()) == 0.0
    out["loss"].backward()
    missing = [n for n, p in model.named_parameters() if p.requires_grad and p.grad is None]
    assert not missing, missing


def test_a_document_with_pairs_keeps_its_loss() -> None:
    """The connection is added only to a head that scored nothing: elsewhere the loss is the heads' own."""
    import torch

    from medibio.scierc.model import collate, featurize

    model, tokenizer, cfg = _model(("relation",), True)
    doc = data.read_documents(TINY)[0]
    batch = collate(featurize([doc], tokenizer, cfg), tokenizer.pad_token_id)
    model.eval()  # no dropout: the two evaluations below see the same network
    out = model(batch)
    assert float(out["relation"]) > 0
    g = model.span_embeddings(batch)[0]
    index = {(s, e): k for k, (s, e, _) in enumerate(batch["features"][0].spans)}
    types = {index[(s, e)]: t for s, e, t in doc.all_entities()}
    own = model._relation_loss(batch["features"][0], g, sorted(types), types, index)
    assert torch.isclose(out["loss"], own)


def test_padding_to_a_multiple_moves_no_span_and_changes_no_prediction() -> None:
    """Windows rounded up to a multiple of 16 sub-tokens (fewer shapes for oneDNN): the span positions follow
    the new width, so the eval-mode span embeddings, and the predictions from them, stay the same."""
    import torch

    from medibio.scierc.model import collate, featurize

    model, tokenizer, cfg = _model(("ner", "relation", "coref"), False)
    model.eval()
    feats = featurize(data.read_documents(TINY)[:2], tokenizer, cfg)
    plain, rounded = collate(feats, tokenizer.pad_token_id), collate(feats, tokenizer.pad_token_id, 16)
    assert rounded["input_ids"].shape[1] % 16 == 0 and rounded["input_ids"].shape[1] > plain["input_ids"].shape[1]
    assert int(rounded["attention_mask"].sum()) == int(plain["attention_mask"].sum())
    for a, b in zip(model.span_embeddings(plain), model.span_embeddings(rounded), strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
    assert model.predict(plain) == model.predict(rounded)


def test_heads_compute_in_fp32_under_bf16_autocast() -> None:
    """Under autocast the encoder's dense layers run in bf16 and the span heads in fp32 (``heads_in_fp32``),
    and the caller's autocast is back on after the forward pass."""
    import torch

    from medibio.scierc.model import collate, featurize

    model, tokenizer, cfg = _model(("ner", "relation", "coref"), False)
    model.train()
    batch = collate(featurize(data.read_documents(TINY)[:1], tokenizer, cfg), tokenizer.pad_token_id, 16)
    seen: dict[str, torch.dtype] = {}
    dense = next(m for m in model.encoder.modules() if isinstance(m, torch.nn.Linear))
    dense.register_forward_hook(lambda m, i, o: seen.update(encoder=o.dtype))
    model.ner.register_forward_hook(lambda m, i, o: seen.update(ner=o.dtype))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = model(batch)
        assert torch.is_autocast_enabled("cpu")  # the heads' context restored the caller's autocast
    assert seen == {"encoder": torch.bfloat16, "ner": torch.float32}
    assert out["loss"].dtype == torch.float32 and not torch.is_autocast_enabled("cpu")


def test_pad_to_multiple_of_must_be_positive() -> None:
    from medibio.core.errors import MedibioError
    from medibio.scierc import presets

    with pytest.raises(MedibioError, match="pad_to_multiple_of must be >= 1"):
        presets.preset("smoke", {"pad_to_multiple_of": 0})


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["joint", "pipeline"])
def test_batch_size_one_trains_on_documents_without_pairs(mode, hand_root, settings) -> None:
    from medibio.scierc import runner

    [record] = runner.run_scierc(profile="smoke", overrides={"mode": mode, "batch_size": 1, "epochs": 1},
                                 settings=settings.replace(data_root=hand_root))
    assert record.ok and record.variant == mode and record.train_examples == 4
    steps = record.hyperparameters["optimizer_steps"]
    assert steps == (4 if mode == "joint" else 8)  # one step per document (and per model in the pipeline)


@pytest.mark.slow
def test_medibio_processes_launches_two_processes_in_pipeline_mode(hand_root, settings) -> None:
    """``settings.processes=2`` (``medibio book --processes 2``): ``run_scierc`` goes through ``accelerate
    launch``; each process gets one document per step, so both meet documents without pairs."""
    from medibio.runs import records as rec
    from medibio.scierc import runner

    one = settings.replace(data_root=hand_root)
    two = one.replace(processes=2)
    root = settings.results_root
    overrides = {"mode": "pipeline", "batch_size": 2, "epochs": 2}
    [record] = runner.run_scierc(profile="smoke", overrides=overrides, settings=two)
    assert record.ok and record.num_processes == 2 and record.device.endswith("x2")
    assert record.hyperparameters["per_device_batch_size"] == 1
    assert {e["part"] for e in record.dev_curve} == {"entity", "relation"}  # the curves of both models
    plan = runner.plan_run(profile="smoke", overrides=overrides, settings=one)
    assert rec.find_record(root, plan.key).created == record.created
    assert not list((root / ".launch").glob("*.yaml"))  # the overrides file is removed
    with pytest.raises(ValueError, match="callbacks cannot follow"):
        runner.run_scierc(profile="smoke", overrides=overrides, settings=two, callbacks=[print])
