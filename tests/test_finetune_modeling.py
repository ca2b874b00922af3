"""Any encoder through the Auto classes: BERT, ELECTRA, ALBERT, DeBERTa-v2 with each task head."""

from __future__ import annotations

import datasets
import pytest
import torch

from medibio.blurb import registry
from medibio.blurb.registry import Problem
from medibio.finetune import features, modeling

ARCHITECTURES = ("bert", "electra", "albert", "deberta-v2")
TASKS = ("NCBI-disease", "ChemProt", "HoC", "BIOSSES")


def _config(kind: str, vocab: int):
    from transformers import AlbertConfig, BertConfig, DebertaV2Config, ElectraConfig

    common = {"vocab_size": vocab, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
              "intermediate_size": 64, "max_position_embeddings": 128}
    if kind == "bert":
        return BertConfig(**common)
    if kind == "electra":
        return ElectraConfig(embedding_size=16, **common)
    if kind == "albert":
        return AlbertConfig(embedding_size=16, **common)
    return DebertaV2Config(relative_attention=True, pos_att_type=["p2c", "c2p"], position_biased_input=False,
                           **common)


@pytest.fixture(scope="module")
def model_dirs(tmp_path_factory):
    from transformers import AutoModel

    from medibio import modelzoo

    tokenizer = modelzoo.load_tokenizer("minilm")
    dirs = {}
    for kind in ARCHITECTURES:
        folder = tmp_path_factory.mktemp(kind)
        torch.manual_seed(0)
        AutoModel.from_config(_config(kind, len(tokenizer))).save_pretrained(str(folder))
        tokenizer.save_pretrained(str(folder))
        dirs[kind] = folder
    return dirs


def _batch(spec, tokenizer):
    if spec.problem is Problem.TOKEN:
        ds = datasets.Dataset.from_dict({"id": ["a", "b"], "tokens": [["aspirin", "helps"], ["no"]],
                                         "tags": [["B", "O"], ["O"]]})
    else:
        label = {Problem.CLASSIFY: lambda: ["CPR:4", "false"], Problem.MULTILABEL: lambda: [[spec.labels[0]], []],
                 Problem.REGRESSION: lambda: [1.5, 3.0]}[spec.problem]()
        ds = datasets.Dataset.from_dict({"id": ["a", "b"], "text": ["aspirin helps", "no"],
                                         "text_pair": ["", ""], "label": label})
    enc = features.encode(ds, spec, tokenizer, 32)
    batch = features.Collator(tokenizer, spec.problem)([enc[0], enc[1]])
    batch.pop("index")
    return batch


@pytest.mark.parametrize("kind", ARCHITECTURES)
@pytest.mark.parametrize("task", TASKS)
def test_heads_for_every_architecture(kind, task, model_dirs):
    spec = registry.get(task)
    model = modeling.build_model(spec, model_dirs[kind])
    tokenizer = modeling.load_tokenizer(model_dirs[kind], spec.problem)
    assert model.config.model_type == kind
    expected = 1 if spec.problem is Problem.REGRESSION else len(spec.labels)
    assert model.config.num_labels == expected
    if spec.problem is not Problem.TOKEN:
        assert model.config.problem_type == modeling.PROBLEM_TYPES[spec.problem]
    assert model.config.hidden_dropout_prob == 0.1
    out = model(**_batch(spec, tokenizer))
    assert torch.isfinite(out.loss)
    assert out.logits.shape[-1] == expected
    assert modeling.head_parameter_names(model)


@pytest.mark.parametrize("kind", ARCHITECTURES)
def test_saved_encoder_reloads_under_a_new_head(kind, model_dirs, tmp_path):
    source = modeling.build_model(registry.get("BIOSSES"), model_dirs[kind])
    with torch.no_grad():
        for p in modeling.encoder(source).parameters():
            p.add_(0.5)  # "trained": differs from the checkpoint
    tokenizer = modeling.load_tokenizer(model_dirs[kind], Problem.REGRESSION)
    folder = modeling.save_encoder(source, tokenizer, tmp_path / "enc")
    target = modeling.build_model(registry.get("ChemProt"), model_dirs[kind], init_from=folder)
    src_state = modeling.encoder(source).state_dict()
    for name, tensor in modeling.encoder(target).state_dict().items():
        assert torch.equal(tensor, src_state[name]), name
    assert target.config.num_labels == len(registry.get("ChemProt").labels)


def test_seeded_head_does_not_depend_on_earlier_random_draws(model_dirs):
    spec = registry.get("ChemProt")
    heads = []
    for draws in (0, 500):
        torch.rand(draws)
        model = modeling.build_model(spec, model_dirs["bert"], seed=7)
        names = set(modeling.head_parameter_names(model))
        heads.append({n: p.detach().clone() for n, p in model.named_parameters() if n in names})
    assert heads[0].keys() and all(torch.equal(heads[0][k], heads[1][k]) for k in heads[0])
