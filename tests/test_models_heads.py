"""Any encoder through the Auto classes: BERT, ELECTRA, ALBERT, DeBERTa-v2 with each task head."""

from __future__ import annotations

import datasets
import pytest
import torch

from medibio.models import heads as modeling
from medibio.tasks import registry
from medibio.tasks.spec import Problem
from medibio.training import features

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

    from medibio.models import zoo as modelzoo

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


def test_split_pairs_gives_each_sentence_as_the_tokenizer_would_alone():
    from medibio.models import zoo as modelzoo

    tokenizer = modelzoo.load_tokenizer("minilm")
    pair = tokenizer(["aspirin helps", "no"], ["it does not", "yes indeed it is"], padding=True, return_tensors="pt")
    ids, mask = modeling.split_pairs(pair["input_ids"], pair["attention_mask"], pair["token_type_ids"],
                                     tokenizer.cls_token_id, tokenizer.pad_token_id)
    alone = tokenizer(["aspirin helps", "no", "it does not", "yes indeed it is"], padding=True, return_tensors="pt")
    assert torch.equal(ids, alone["input_ids"]) and torch.equal(mask, alone["attention_mask"])
    # a tokenizer that gives no segment ids (the study's SentencePiece vocabularies): found after the first [SEP]
    found = modeling.split_pairs(pair["input_ids"], pair["attention_mask"], None, tokenizer.cls_token_id,
                                 tokenizer.pad_token_id)
    assert torch.equal(found[0], ids) and torch.equal(found[1], mask)
    assert torch.equal(modeling.segments_after_first_sep(pair["input_ids"], pair["attention_mask"].bool()),
                       pair["token_type_ids"] * pair["attention_mask"])
    single = tokenizer(["aspirin helps"], return_tensors="pt")
    with pytest.raises(ValueError, match="second sentence"):
        modeling.split_pairs(single["input_ids"], single["attention_mask"], single["token_type_ids"], 101, 0)


@pytest.mark.realdata
def test_cosine_head_starts_at_the_frozen_cosine_baseline_and_learns(data_root):
    """At step 0 the bi-encoder head ranks BIOSSES test pairs exactly like the frozen encoder's cosine
    (medibio.baselines.frozen), which is why it cannot start below that baseline; a step changes its output."""
    from scipy.stats import pearsonr

    from medibio.baselines import frozen
    from medibio.models import zoo
    from medibio.tasks.loaders import load_blurb

    spec = registry.get("BIOSSES")
    test = load_blurb("BIOSSES", data_root, splits=["test"])["test"]
    tokenizer = modeling.load_tokenizer("minilm", spec.problem)
    model = modeling.build_model(spec, "minilm", seed=1, pooling="cosine").eval()
    assert modeling.head_parameter_names(model) == ["scale", "shift"]
    enc = features.encode(test, spec, tokenizer, 128)
    batch = features.Collator(tokenizer, spec.problem)([enc[i] for i in range(len(enc))])
    batch.pop("index")
    labels = batch.pop("labels")
    with torch.no_grad():
        predicted = model(**batch).logits[:, 0]
    low, high = spec.value_range
    cosine = (predicted - (high + low) / 2) / ((high - low) / 2)
    encoder = frozen.Encoder(zoo.resolve("minilm"))  # the encoder takes a resolved folder or hub id
    left = encoder.sentence_embeddings(test.remove_columns("text_pair"), spec, 128, 8)
    right = encoder.sentence_embeddings(test.remove_columns("text").rename_column("text_pair", "text"), spec, 128, 8)
    expected = torch.tensor(frozen.cosine_similarity(left, right), dtype=torch.float)
    assert torch.allclose(cosine, expected, atol=1e-5)
    assert pearsonr(predicted.numpy(), labels.numpy())[0] > 0.5  # the encoder's similarity is already there
    model.train()
    out = model(**batch, labels=labels)
    out.loss.backward()
    assert model.scale.grad is not None and model.base_model.embeddings.word_embeddings.weight.grad is not None


def test_cosine_head_is_refused_outside_sentence_pair_regression(model_dirs):
    with pytest.raises(ValueError, match="sentence-pair regression"):
        modeling.build_model(registry.get("ChemProt"), str(model_dirs["bert"]), pooling="cosine")


def test_deberta_mean_pools_in_its_head(model_dirs):
    """DeBERTa keeps its pooler (a dense layer over the first token) in the classification head: pooling="mean"
    replaces that one, so the classifier reads the masked mean of the last layer (the ChemProt/DDI presets of
    the cpu profiles, applied to the CPU study's DeBERTa models)."""
    import copy

    spec = registry.get("ChemProt", "blurb")
    model = modeling.build_model(spec, "tiny-deberta", seed=0, pooling="mean").eval()
    ids = torch.randint(5, 60, (3, 7))
    mask = torch.ones(3, 7, dtype=torch.long)
    mask[0, 4:] = 0
    with torch.no_grad():
        hidden = model.base_model(input_ids=ids, attention_mask=mask).last_hidden_state
        m = mask.unsqueeze(-1).float()
        expected = model.classifier((hidden * m).sum(1) / m.sum(1))
        logits = model(input_ids=ids, attention_mask=mask).logits
        assert torch.allclose(logits, expected, atol=1e-5)
        model(input_ids=torch.randint(5, 60, (2, 11)), attention_mask=torch.ones(2, 11, dtype=torch.long))
        assert torch.equal(copy.deepcopy(model)(input_ids=ids, attention_mask=mask).logits, logits)
    with pytest.raises(ValueError, match="pooler to replace"):
        modeling.use_mean_pooling(modeling.build_model(registry.get("BC5-chem", "blurb"), "tiny-deberta", seed=0))


def test_a_copy_of_a_mean_pooled_model_pools_with_its_own_mask(model_dirs):
    """The bf16 copy that evaluates (medibio.core.precision.evaluation_model) is a deep copy: its pooler
    must get the mask of its own call, not the original's last one."""
    import copy

    spec = registry.get("ChemProt", "blurb")
    model = modeling.build_model(spec, model_dirs["bert"], seed=0, pooling="mean").eval()
    long_ids = torch.randint(5, 60, (2, 11))
    with torch.no_grad():
        model(input_ids=long_ids, attention_mask=torch.ones(2, 11, dtype=torch.long))  # a stale mask of 11
        twin = copy.deepcopy(model)
        ids = torch.randint(5, 60, (3, 7))
        mask = torch.ones(3, 7, dtype=torch.long)
        mask[0, 4:] = 0
        assert torch.equal(twin(input_ids=ids, attention_mask=mask).logits,
                           model(input_ids=ids, attention_mask=mask).logits)
