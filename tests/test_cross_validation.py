"""Cross-validated fine-tuning (issue 35 §2): BIOSSES's 20 official test pairs are too few to judge an IFT gain
alone, so a run may train, select and test on one fold of a 5-fold cross-validation over all 100 pairs, and
the verdicts pool each seed's five folds so that every pair is scored once.

Checked here on hand-made data: the folds partition the examples and keep train, dev and test apart; the
option is checked, named in the variant, and absent from the digest of runs that do not use it; the pooled
statistic of a seed is the metric over every example of its folds, and a fold set that scores an example twice
is refused.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from datasets import Dataset

from medibio.finetune.variants import fold_of, variant_name
from medibio.results import significance
from medibio.runs import records
from medibio.runs.identity import RunKey
from medibio.tasks.metrics import evaluate
from medibio.training import config, features


def _splits(n: int = 100) -> dict[str, Dataset]:
    ids = [f"p{i}" for i in range(n)]
    cut = {"train": ids[:64], "dev": ids[64:80], "test": ids[80:]}
    return {split: Dataset.from_dict({"id": part, "label": [float(i) for i in range(len(part))]})
            for split, part in cut.items()}


def test_the_folds_partition_every_example_and_keep_train_dev_and_test_apart() -> None:
    full = _splits()
    tests, devs = [], []
    for fold in range(1, config.CV_FOLDS + 1):
        split, note = features.cv_splits(full, fold, config.CV_FOLDS, seed=7)
        train, dev, test = (set(split[s]["id"]) for s in ("train", "dev", "test"))
        assert (len(train), len(dev), len(test)) == (60, 20, 20)
        assert not (train & dev or train & test or dev & test)
        assert len(train | dev | test) == 100
        assert f"fold {fold} of a 5-fold cross-validation over the 100 examples" in note and "NOT" in note
        tests.append(test)
        devs.append(dev)
    assert set().union(*tests) == {f"p{i}" for i in range(100)}  # every example is a test example once
    assert sum(map(len, tests)) == 100
    assert devs == tests[1:] + tests[:1]  # dev is the next fold's test
    again, _ = features.cv_splits(full, 3, config.CV_FOLDS, seed=7)
    assert again["test"]["id"] == features.cv_splits(full, 3, config.CV_FOLDS, seed=7)[0]["test"]["id"]
    other, _ = features.cv_splits(full, 3, config.CV_FOLDS, seed=8)
    assert set(other["test"]["id"]) != tests[2]  # the seed decides the folds


def test_the_fold_option_is_checked_named_in_the_variant_and_absent_from_other_digests() -> None:
    assert "cv_fold" not in config.FinetuneConfig().to_dict()  # earlier runs keep their digests
    assert config.FinetuneConfig(cv_fold=2).to_dict()["cv_fold"] == 2
    assert config.FinetuneConfig(cv_fold="5").cv_fold == 5  # from a flag or a YAML file
    for wrong in (0, 6, "two"):
        with pytest.raises(config.OptionError, match=r"cv_fold: .*an integer in \[1, 5\]"):
            config.FinetuneConfig(cv_fold=wrong)
    assert variant_name(config.FinetuneConfig(cv_fold=3)) == "cv3"
    assert variant_name(config.FinetuneConfig(cv_fold=3), ["STS-B"]) == "ift-STS-B+cv3"
    for chain, fold in (((), 3), (("STS-B",), 2), (("GAD",), None), ((), None)):  # fold_of reads them back
        name = variant_name(config.FinetuneConfig(cv_fold=fold), chain)
        arm = variant_name(config.FinetuneConfig(), chain)
        assert fold_of(name) == (arm, f"cv{fold}" if fold else "")


class _Folds:
    """A BIOSSES data root of 10 pairs (train 6, dev 2, test 2) and cross-validated runs written by hand."""

    def __init__(self, base: Path, n: int = 10) -> None:
        self.data, self.results = base / "data", base / "results"
        folder = self.data / "blurb" / "BIOSSES"
        folder.mkdir(parents=True)
        self.gold = {f"{i}": float(i % 5) for i in range(n)}
        cut = {"train": range(0, 6 * n // 10), "dev": range(6 * n // 10, 8 * n // 10), "test": range(8 * n // 10, n)}
        for split, rows in cut.items():
            folder.joinpath(f"{split}.tsv").write_text(
                "pair_id\tsent1\tsent2\tscore\n" + "".join(f"{i}\ta\tb\t{self.gold[str(i)]}\n" for i in rows),
                encoding="utf-8")

    def write(self, seed: int, fold: int | None, ids: list[str], noise: float, arm: str = "base",
              model: str = "minilm") -> records.RunRecord:
        variant = arm if fold is None else ("" if arm == "base" else f"{arm}+") + f"cv{fold}"
        key = RunKey("finetune", "cpu-ift", model, variant, "BIOSSES", seed, "c0ffee000000")
        path = key.predictions_path(self.results)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps({"id": i, "prediction": self.gold[i] + noise * (int(i) % 3 - 1)}) + "\n"
                                for i in ids), encoding="utf-8")
        details = {"intermediate": [arm[4:]] if arm != "base" else []}
        if fold is not None:
            details.update(cv_fold=fold, cv_folds=5)
        record = records.RunRecord(dataset="BIOSSES", model={"tag": model, "hash": model}, profile="cpu-ift", seed=seed,
                                   variant=variant, predictions=path.name, score_test=0.0, score_dev=0.0,
                                   config_digest="c0ffee000000", details=details)
        records.write_record(record, self.results)
        return record


def test_a_seeds_folds_are_pooled_into_one_score_over_every_example(tmp_path) -> None:
    folds = _Folds(tmp_path)
    ids = sorted(folds.gold, key=int)
    made = [folds.write(seed, fold, ids[2 * (fold - 1):2 * fold], noise=0.3 * seed)
            for seed in (1, 2) for fold in range(1, 6)]
    made.append(folds.write(3, 1, ids[:2], noise=0.1))  # seed 3 has one fold only: left out
    runs = significance.cv_runs(made, folds.results, "base", "BIOSSES", folds.data)
    assert runs is not None and runs.seeds == (1, 2) and runs.ids == frozenset(ids)
    assert runs.system == "base (5-fold CV, 2 seeds)"
    for seed, score in zip(runs.seeds, runs.scores, strict=True):
        predictions = [folds.gold[i] + 0.3 * seed * (int(i) % 3 - 1) for i in ids]
        expected = evaluate("BIOSSES", [folds.gold[i] for i in ids], predictions)["score"]
        assert score == pytest.approx(expected)
    assert runs.scores[0] > runs.scores[1]  # more noise, lower correlation
    assert np.isfinite(runs.mean)


def test_folds_that_score_an_example_twice_are_refused(tmp_path) -> None:
    folds = _Folds(tmp_path)
    ids = sorted(folds.gold, key=int)
    made = [folds.write(1, fold, ids[2 * (fold - 1):2 * fold] + (["0"] if fold == 4 else []), noise=0.1)
            for fold in range(1, 6)]
    with pytest.raises(significance.SelectionError, match="seed 1: fold 4 .* scores examples another fold scored"):
        significance.cv_runs(made, folds.results, "base", "BIOSSES", folds.data)


def test_the_ift_claim_shows_the_cross_validation_beside_its_declared_statistic(tmp_path, session_settings) -> None:
    from medibio.book import claims, evidence

    folds = _Folds(tmp_path, n=50)
    ids = sorted(folds.gold, key=int)
    claim = claims.get("ift-biosses")
    for model in ("minilm", *claim.test.models):  # the declared #3 models, and MiniLM beside them
        for seed in (1, 2, 3):
            for arm, noise in (("base", 1.0), ("ift-STS-B", 0.2)):
                folds.write(seed, None, ids[40:], noise + 0.05 * seed, arm, model)  # the official test split
                for fold in range(1, 6):
                    folds.write(seed, fold, ids[10 * (fold - 1):10 * fold], noise + 0.05 * seed, arm, model)
    settings = session_settings.replace(results_root=folds.results, data_root=folds.data)
    found = evidence.our_evidence(claim, settings, "cpu", resamples=300, recorded=None)
    assert "ift-STS-B (6 runs: 2 pretrained models × their seeds) vs base" in found.runs  # the declared one
    cv = [b for b in found.beside if "cross-validation" in b.label]
    assert [b.label.split(",")[0] for b in cv] == ["minilm", "5-fold cross-validation over all 50 examples (secondary"]
    assert cv[0].runs == "ift-STS-B (5-fold CV, 3 seeds) vs base (5-fold CV, 3 seeds) on BIOSSES"
    assert cv[1].runs == ("ift-STS-B (5-fold CV, 6 seeds of 2 pretrained models) vs base (5-fold CV, 6 seeds of 2 "
                          "pretrained models) on BIOSSES")
