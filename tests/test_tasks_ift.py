"""Intermediate-task registry and the loaders of data that is not in the data root (tiny fixtures)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from medibio.core.errors import DataMissingError, InputFormatError
from medibio.tasks import ift as tasks
from medibio.tasks import loaders, metrics, ranking
from medibio.tasks.spec import Problem, TaskSpec
from medibio.training.config import trainable_task

FIXTURE_ROOT = Path(__file__).parent / "fixtures"  # holds ift/clinicalsts and ift/scirepeval


def test_registry_names_aliases_and_blurb_fallback():
    assert trainable_task("stsb").name == "STS-B"
    assert trainable_task("SICK").name == "SICK-R"
    assert trainable_task("fos").name == "fields-of-study"
    blurb = trainable_task("BIOSSES")
    assert isinstance(blurb, TaskSpec) and blurb.group.value == "SS"
    # neither an intermediate task nor a BLURB dataset: the error says so and lists both kinds
    with pytest.raises(KeyError, match="unknown task 'MNLI'") as err:
        trainable_task("MNLI")
    assert "STS-B" in str(err.value) and "BIOSSES" in str(err.value)


def test_every_metric_exists_and_table2_tasks_are_present():
    for spec in tasks.TASKS:
        assert spec.metric in metrics.METRICS, spec.name
        assert spec.reported_metric in metrics.METRICS, spec.name
        assert spec.problem in (Problem.CLASSIFY, Problem.REGRESSION, Problem.MULTILABEL)
        assert (spec.problem is Problem.REGRESSION) == (spec.labels == ())
    table2 = {t.name: t.reported_metric for t in tasks.TASKS if t.paper_sizes}
    assert table2 == {"STS-B": "pearson", "ClinicalSTS": "pearson", "citation-count": "kendall_tau",
                      "publication-year": "kendall_tau", "mesh-descriptors": "macro_f1",
                      "fields-of-study": "multilabel_macro_f1", "citation-prediction": "map", "search": "ndcg",
                      "same-author": "map", "high-influence-cite": "map"}
    assert len(tasks.FIELDS_OF_STUDY) == 23 and len(tasks.MESH_DESCRIPTORS) == 30


def test_clinicalsts_years_and_combined():
    d18 = loaders.load_task("ClinicalSTS-2018", data_root=FIXTURE_ROOT)
    assert {k: len(v) for k, v in d18.items()} == {"train": 3, "dev": 2, "test": 2}
    assert d18["dev"]["id"] == d18["test"]["id"]  # the official test set doubles as dev
    row = d18["train"][0]
    assert row == {"id": "clinicalsts2018-train-00001", "text": "The patient denies chest pain.",
                   "text_pair": "Patient reports no chest pain.", "label": 4.5}
    assert d18["train"].features["label"].dtype == "float64"
    both = loaders.load_task("ClinicalSTS", data_root=FIXTURE_ROOT)
    assert {k: len(v) for k, v in both.items()} == {"train": 5, "dev": 3, "test": 3}
    assert len(set(both["train"]["id"])) == 5


def test_clinicalsts_missing_says_where_to_get_it(tmp_path: Path):
    (tmp_path / "ift").mkdir()
    with pytest.raises(DataMissingError) as err:
        loaders.load_task("ClinicalSTS-2019", data_root=tmp_path)
    assert "portal.dbmi.hms.harvard.edu" in str(err.value) and "clinicalsts/2019" in str(err.value)


def test_clinicalsts_bad_line_names_file_and_line(tmp_path: Path):
    folder = tmp_path / "ift" / "clinicalsts" / "2018"
    folder.mkdir(parents=True)
    (folder / "train.tsv").write_text("a\tb\t3.0\nonly two\tfields\n")
    (folder / "test.tsv").write_text("a\tb\t1.0\n")
    with pytest.raises(InputFormatError) as err:
        loaders.load_task("ClinicalSTS-2018", data_root=tmp_path)
    assert err.value.line == 2 and err.value.path.name == "train.tsv"
    (folder / "train.tsv").write_text("a\tb\t7.5\n")
    with pytest.raises(InputFormatError, match="similarity score"):
        loaders.load_task("ClinicalSTS-2018", data_root=tmp_path)


def test_scirepeval_regression_and_classification():
    cc = loaders.load_task("citation-count", data_root=FIXTURE_ROOT)
    assert list(cc) == ["train", "dev"] and len(cc["train"]) == 2
    assert cc["train"][0] == {"id": "101", "text": "Statin use and liver enzymes",
                              "text_pair": "We followed 200 patients on statins.", "label": 2.5649}
    year = loaders.load_task("pub_year", data_root=FIXTURE_ROOT)  # dev from a JSON-array val.json
    assert year["dev"]["label"] == [0.3]
    mesh = loaders.load_task("mesh-descriptors", data_root=FIXTURE_ROOT)
    assert mesh["train"]["label"] == ["Breast Neoplasms", "Hypertension"]
    fos = loaders.load_task("fields-of-study", data_root=FIXTURE_ROOT)
    assert fos["train"][0]["label"] == ["Environmental science", "Geography"]
    assert fos["dev"][0]["label"] == ["Computer science", "Mathematics"]


def test_scirepeval_pair_tasks():
    cite = loaders.load_task("citation-prediction", data_root=FIXTURE_ROOT)
    assert cite["train"]["id"] == ["501::502", "501::503"] and cite["train"]["label"] == ["1", "0"]
    assert cite["train"][0]["text"] == "Protein folding with deep nets. We predict structures."
    search = loaders.load_task("search", data_root=FIXTURE_ROOT)
    assert search["train"]["id"] == ["s1::601", "s1::602", "s1::603"]
    assert search["train"]["text"][0] == "insulin resistance obesity"
    assert search["train"]["label"] == ["1", "0", "1"]
    same = loaders.load_task("same-author", data_root=FIXTURE_ROOT)
    assert same["dev"]["id"] == ["704::705", "704::706"]
    infl = loaders.load_task("high-influence-cite", data_root=FIXTURE_ROOT)
    assert len(infl["dev"]) == 3 and infl["dev"].features["label"].dtype == "string"


def test_scirepeval_missing_and_malformed(tmp_path: Path):
    with pytest.raises(DataMissingError, match="allenai/scirepeval"):
        loaders.load_task("search", data_root=tmp_path)
    folder = tmp_path / "ift" / "scirepeval" / "mesh_descriptors"
    folder.mkdir(parents=True)
    (folder / "train.jsonl").write_text('{"title": "x", "abstract": "", "descriptor": "Brain"}\n'
                                        '{"title": "y", "abstract": "", "descriptor": "Toes"}\n')
    with pytest.raises(DataMissingError, match="val.jsonl"):
        loaders.load_task("mesh", data_root=tmp_path)
    (folder / "val.jsonl").write_text('{"title": "z", "abstract": "", "descriptor": "Brain"}\n')
    with pytest.raises(InputFormatError) as err:
        loaders.load_task("mesh", data_root=tmp_path)
    assert err.value.line == 2 and "Toes" in str(err.value)
    (folder / "train.jsonl").write_text('{"title": "x", "abstract": "", "descriptor": "Brain"}\n{oops\n')
    with pytest.raises(InputFormatError) as err:
        loaders.load_task("mesh", data_root=tmp_path)
    assert err.value.line == 2


def test_ranking_metrics_by_hand():
    # one query, candidates a (relevant), b, c (relevant); scores rank them a, b, c
    ids, labels, scores = ["q::a", "q::b", "q::c"], ["1", "0", "1"], [0.9, 0.8, 0.1]
    # AP = (1/1 + 2/3) / 2 = 0.8333
    assert ranking.ranking_score("map", ids, labels, scores)["score"] == pytest.approx(83.3333, abs=1e-3)
    # DCG = 1/log2(2) + 0 + 1/log2(4) = 1.5; ideal = 1 + 1/log2(3) = 1.63093 -> 0.919721
    assert ranking.ranking_score("ndcg", ids, labels, scores)["score"] == pytest.approx(
        100 * 1.5 / (1 + 1 / math.log2(3)), abs=1e-6)
    # a second query ranked perfectly averages in: MAP = (0.8333 + 1) / 2
    ids2 = ids + ["r::x", "r::y"]
    res = ranking.ranking_score("map", ids2, labels + ["1", "0"], scores + [0.7, 0.2])
    assert res["score"] == pytest.approx(91.6667, abs=1e-3) and res["queries"] == 2
    with pytest.raises(ValueError, match="not '<query id>::"):
        ranking.split_pair_id("no-separator")
