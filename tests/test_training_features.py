"""Tokenisation, label alignment, padding, bucketing and decoding of the fine-tuning engine (no data root)."""

from __future__ import annotations

from dataclasses import dataclass

import datasets
import pytest

from medibio.tasks import registry
from medibio.tasks.spec import Problem
from medibio.training import features


@pytest.fixture(scope="module")
def tokenizer():
    from medibio.models import zoo as modelzoo

    return modelzoo.load_tokenizer("minilm")


def _ner_split() -> datasets.Dataset:
    return datasets.Dataset.from_dict({
        "id": ["s1", "s2"],
        "tokens": [["Naloxone", "reverses", "hypertension", "."], ["Aspirin", "."]],
        "tags": [["B", "O", "B", "O"], ["B", "O"]],
    })


def test_token_labels_sit_on_first_subtoken_only(tokenizer):
    spec = registry.get("NCBI-disease")
    enc = features.encode(_ner_split(), spec, tokenizer, max_length=64)
    row = enc[0]
    ids = row["input_ids"]
    words = tokenizer.convert_ids_to_tokens(ids)
    # "naloxone" splits into several word pieces: only the first carries B, the rest -100
    assert words[:5] == ["[CLS]", "na", "##lo", "##xon", "##e"]
    first = 1
    assert row["labels"][first] == spec.labels.index("B")
    assert row["word_ids"][first] == 0
    assert row["labels"][2:5] == [-100] * 3 and row["word_ids"][2:5] == [-1] * 3
    # specials ([CLS], [SEP]) are ignored too; one labelled position per word
    assert row["labels"][0] == -100 and row["labels"][-1] == -100
    assert sum(1 for x in row["labels"] if x != -100) == 4
    assert row["n_words"] == 4 and row["length"] == len(ids) and row["index"] == 0


def test_truncated_words_get_outside_tag_and_are_counted(tokenizer):
    spec = registry.get("NCBI-disease")
    enc = features.encode(_ner_split(), spec, tokenizer, max_length=4)  # [CLS] + 2 pieces + [SEP]
    row = enc[0]
    assert len(row["input_ids"]) == 4
    pred_ids = [spec.labels.index("B")] * 4
    tags, missing = features.decode_token_predictions(pred_ids, row["word_ids"], row["n_words"],
                                                      list(spec.labels), features.outside_label(spec))
    assert len(tags) == 4 and tags[0] == "B"
    assert missing == 3 and tags[1:] == ["O", "O", "O"]


def test_pair_encoding_and_truncation(tokenizer):
    spec = registry.get("PubMedQA")
    ds = datasets.Dataset.from_dict({"id": ["q1"], "text": ["is aspirin useful?"],
                                     "text_pair": ["aspirin " * 300], "label": ["yes"]})
    row = features.encode(ds, spec, tokenizer, max_length=32)[0]
    assert len(row["input_ids"]) == 32
    assert row["labels"] == spec.labels.index("yes")
    assert 1 in row["token_type_ids"]  # the second segment is present
    # the (short) question survives truncation: the context was cut
    assert tokenizer.decode(row["input_ids"]).startswith("[CLS] is aspirin useful? [SEP]")


def test_single_text_has_no_second_segment(tokenizer):
    spec = registry.get("ChemProt")
    ds = datasets.Dataset.from_dict({"id": ["r1"], "text": ["@CHEMICAL$ inhibits @GENE$ ."], "text_pair": [""],
                                     "label": ["CPR:4"]})
    row = features.encode(ds, spec, tokenizer, max_length=256)[0]
    assert set(row["token_type_ids"]) == {0}
    assert row["labels"] == spec.labels.index("CPR:4")


def test_multilabel_and_regression_labels(tokenizer):
    hoc = registry.get("HoC")
    ds = datasets.Dataset.from_dict({"id": ["p1"], "text": ["tumour cells evade apoptosis"], "text_pair": [""],
                                     "label": [[hoc.labels[2], hoc.labels[7]]]})
    vec = features.encode(ds, hoc, tokenizer, 64)[0]["labels"]
    assert vec == [1.0 if i in (2, 7) else 0.0 for i in range(10)]
    biosses = registry.get("BIOSSES")
    ds = datasets.Dataset.from_dict({"id": ["b1"], "text": ["a"], "text_pair": ["b"], "label": [3.25]})
    assert features.encode(ds, biosses, tokenizer, 64)[0]["labels"] == pytest.approx(3.25)


def test_unknown_label_is_an_error_naming_the_example(tokenizer):
    spec = registry.get("ChemProt")
    ds = datasets.Dataset.from_dict({"id": ["bad-7"], "text": ["x"], "text_pair": [""], "label": ["CPR:99"]})
    with pytest.raises(ValueError, match="bad-7.*CPR:99"):
        features.encode(ds, spec, tokenizer, 64)


def test_collator_pads_dynamically_and_pads_token_labels_with_ignore(tokenizer):
    spec = registry.get("NCBI-disease")
    enc = features.encode(_ner_split(), spec, tokenizer, 64)
    rows = [enc[0], enc[1]]
    batch = features.Collator(tokenizer, Problem.TOKEN)(rows)
    width = max(len(r["input_ids"]) for r in rows)
    assert tuple(batch["input_ids"].shape) == (2, width)
    short = rows[1]
    assert batch["labels"][1, len(short["labels"]):].tolist() == [-100] * (width - len(short["labels"]))
    assert batch["index"].tolist() == [0, 1]
    fixed = features.Collator(tokenizer, Problem.TOKEN, pad_to=64)(rows)
    assert tuple(fixed["input_ids"].shape) == (2, 64)


def test_bucket_sampler_is_deterministic_complete_and_groups_lengths():
    lengths = [(i * 37) % 200 + 1 for i in range(1000)]
    a = features.LengthBucketSampler(lengths, batch_size=16, seed=3, pool_batches=10)
    b = features.LengthBucketSampler(lengths, batch_size=16, seed=3, pool_batches=10)
    a.set_epoch(1)
    b.set_epoch(1)
    batches = list(a)
    assert batches == list(b)  # every process computes the same order
    assert sorted(i for batch in batches for i in batch) == list(range(1000))
    assert len(batches) == len(a) == 63
    b.set_epoch(2)
    assert list(b) != batches  # a new order each epoch
    spread = sum(max(lengths[i] for i in bt) - min(lengths[i] for i in bt) for bt in batches) / len(batches)
    unbucketed = features.LengthBucketSampler(lengths, 16, seed=3, bucketing=False)
    raw = sum(max(lengths[i] for i in bt) - min(lengths[i] for i in bt) for bt in unbucketed) / len(batches)
    assert spread < raw / 5  # far less padding inside a batch


def test_eval_order_is_longest_first_and_covers_all():
    sampler = features.LengthBucketSampler([5, 50, 20, 7], batch_size=2, seed=0, shuffle=False)
    assert list(sampler) == [[1, 2], [3, 0]]


@dataclass
class _Spec:
    name: str
    labels: tuple
    negative_label: str | None = None


def test_decode_sequence_predictions():
    labels = ["yes", "no", "maybe"]
    assert features.decode_sequence_prediction([0.1, 2.0, -1.0], Problem.CLASSIFY, labels) == "no"
    assert features.decode_sequence_prediction([1.5, -0.2, 0.3], Problem.MULTILABEL, labels) == ["yes", "maybe"]
    assert features.decode_sequence_prediction([2.5], Problem.REGRESSION, []) == 2.5
    assert features.outside_label(_Spec("x", ("I-PAR", "O"))) == "O"
    assert features.outside_label(_Spec("x", ("a", "b"), negative_label="b")) == "b"


def test_subsample_is_seeded_and_keeps_order():
    ds = datasets.Dataset.from_dict({"id": [str(i) for i in range(100)]})
    a = features.subsample(ds, 10, seed=5)["id"]
    assert a == features.subsample(ds, 10, seed=5)["id"]
    assert a == sorted(a, key=int) and len(a) == 10
    assert len(features.subsample(ds, None, 5)) == 100 and len(features.subsample(ds, 500, 5)) == 100


def test_multilabel_threshold_decoding():
    from medibio.tasks.spec import Problem
    from medibio.training.features import decode_sequence_prediction

    # logits -2.0 (p=0.12), 0.1 (p=0.52), -1.0 (p=0.27)
    out = [-2.0, 0.1, -1.0]
    assert decode_sequence_prediction(out, Problem.MULTILABEL, ["a", "b", "c"]) == ["b"]
    assert decode_sequence_prediction(out, Problem.MULTILABEL, ["a", "b", "c"], threshold=0.25) == ["b", "c"]
    assert decode_sequence_prediction(out, Problem.MULTILABEL, ["a", "b", "c"], threshold=0.1) == ["a", "b", "c"]


def test_class_weights_balanced_and_sqrt():
    labels = [0] * 80 + [1] * 20  # class 2 never occurs in this subset
    assert features.class_weights(labels, 3, "none") is None
    bal = features.class_weights(labels, 3, "balanced")
    # 1/80 and 1/20, normalised to mean 1 over the two present classes; the absent class gets 0
    assert bal == pytest.approx([0.4, 1.6, 0.0])
    sq = features.class_weights(labels, 3, "sqrt")
    assert sq[1] / sq[0] == pytest.approx(2.0) and (sq[0] + sq[1]) / 2 == pytest.approx(1.0) and sq[2] == 0
    # a balanced loss gives every present class the same total weight
    assert 80 * bal[0] == pytest.approx(20 * bal[1])
    with pytest.raises(ValueError, match="class_weighting must be one of"):
        features.class_weights(labels, 3, "inverse")
