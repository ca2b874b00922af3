"""Constant-answer baselines: taken from train, scored with the official metric on the full test set."""

from __future__ import annotations

import pytest

from medibio.baselines import constant as baselines
from medibio.tasks import loaders

pytestmark = pytest.mark.realdata


def test_yes_no_questions_score_the_share_of_the_majority_answer(data_root):
    assert baselines.constant_answer("PubMedQA", data_root) == "yes"
    assert baselines.majority_score("PubMedQA", data_root) == pytest.approx(100 * 276 / 500)
    assert baselines.majority_score("BioASQ", data_root) == pytest.approx(100 * 94 / 140)


def test_gad_all_positive_f1_follows_from_the_positive_share(data_root):
    test = loaders.load_blurb("GAD", data_root, splits="test")["test"]
    share = sum(str(v) == "1" for v in test["label"]) / len(test)
    assert baselines.constant_answer("GAD", data_root) == "1"
    # precision = share, recall = 1
    assert baselines.majority_score("GAD", data_root) == pytest.approx(100 * 2 * share / (1 + share))


def test_answers_that_score_zero(data_root):
    assert baselines.constant_answer("DDI", data_root) == "DDI-false"  # the negative class: no relation found
    scores = baselines.majority_scores(["NCBI-disease", "DDI", "BIOSSES", "EBM-PICO"], data_root)
    assert scores == {"NCBI-disease": 0.0, "DDI": 0.0, "BIOSSES": 0.0, "EBM-PICO": 0.0}
    mean = baselines.constant_answer("BIOSSES", data_root)
    assert 0 < mean < 4  # the training mean of a 0-4 similarity scale
