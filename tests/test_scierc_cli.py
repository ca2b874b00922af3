"""``medibio scierc evaluate|table|train`` through the real entry point (``medibio.cli.main``): scores of a
predictions file against a split, a file that lacks documents of the split (an error unless ``--partial``),
malformed lines (file and line named) and unknown profiles (one line listing the known ones)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import run_main as _run

TINY = Path(__file__).parent / "fixtures" / "scierc" / "tiny.json"
PROFILES = "smoke, cpu, gpu, paper"


@pytest.fixture()
def data_root(tmp_path: Path) -> Path:
    """A data root whose three SciERC splits are the two hand-made documents D1 and D2."""
    folder = tmp_path / "data" / "scierc"
    folder.mkdir(parents=True)
    for split in ("train", "dev", "test"):
        (folder / f"{split}.json").write_text(TINY.read_text())
    return tmp_path / "data"


def _gold() -> list[dict]:
    docs = [json.loads(line) for line in TINY.read_text().splitlines()]
    return [{"doc_key": d["doc_key"], "entities": [e for s in d["ner"] for e in s],
             "relations": [r for s in d["relations"] for r in s], "clusters": d["clusters"]} for d in docs]


def _write(path: Path, rows: list[dict | str]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def _evaluate(path: Path, data_root: Path, capsys, *extra: str) -> tuple[int, str, str]:
    return _run(["scierc", "evaluate", str(path), "--data-root", str(data_root), *extra], capsys)


def test_gold_as_predictions_scores_100_and_a_missing_entity_costs_what_it_should(tmp_path, data_root,
                                                                                  capsys) -> None:
    code, out, err = _evaluate(_write(tmp_path / "gold.jsonl", _gold()), data_root, capsys, "--json")
    assert code == 0, err
    scores = json.loads(out)
    assert scores["documents"] == scores["split_documents"] == 2
    for key in ("ner_f1", "rel_f1", "relplus_f1", "coref_f1", "muc_f1", "b3_f1", "ceafe_f1"):
        assert scores[key] == pytest.approx(100.0), key

    # type D2's Material entity as a Method: NER 5 of 6 right (precision and recall); REL keeps the relation
    # (boundaries only); REL+ loses it (its argument's predicted type is wrong): 2 of 3
    rows = _gold()
    rows[1]["entities"] = [[0, 1, "Task"], [3, 3, "Method"]]
    code, out, _ = _evaluate(_write(tmp_path / "less.jsonl", rows), data_root, capsys, "--json")
    scores = json.loads(out)
    assert code == 0
    assert (scores["ner_p"], scores["ner_r"]) == (pytest.approx(500 / 6), pytest.approx(500 / 6))
    assert scores["ner_f1"] == pytest.approx(500 / 6)
    assert scores["rel_f1"] == pytest.approx(100.0)
    assert scores["relplus_p"] == pytest.approx(200 / 3) and scores["relplus_r"] == pytest.approx(200 / 3)


def test_a_file_without_every_document_is_an_error_unless_partial(tmp_path, data_root, capsys) -> None:
    path = _write(tmp_path / "half.jsonl", _gold()[:1])
    code, out, err = _evaluate(path, data_root, capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert str(path) in err and "each of the split's 2 documents" in err and "missing 1: D2" in err
    assert "--partial" in err

    code, out, err = _evaluate(path, data_root, capsys, "--partial")
    assert code == 0, err
    assert "(1 of 2 test documents)" in out and "NER 100.00" in out


@pytest.mark.parametrize(("rows", "line", "expected"), [
    ([{"doc_key": "D1"}, '{"doc_key": "D2", '], 2,
     "a JSON object per document (doc_key, entities, relations, clusters), got 'invalid JSON"),
    ([{"doc_key": "D9"}], 1, "an object whose doc_key is a document of the split"),
    ([["D1"]], 1, "an object whose doc_key is a document of the split"),
    ([{"doc_key": "D1"}, {"doc_key": "D1"}], 2, "one line per document ('D1' is on line 1 already)"),
    ([{"doc_key": "D1", "entities": [[0, "x"]]}], 1, "'entities' as a list of [start, end, type] items"),
    ([{"doc_key": "D1", "relations": [[0, 0, 2, 3]]}], 1, "'relations' as a list of [start1, end1, start2, end2"),
    ([{"doc_key": "D1", "clusters": [[[2, 3], [5]]]}], 1, "'clusters' as a list of clusters as lists of"),
    ([{"doc_key": "D1", "entities": {"a": 1}}], 1, "'entities' as a list of"),
])
def test_malformed_lines_name_file_and_line(tmp_path, data_root, capsys, rows, line, expected) -> None:
    path = _write(tmp_path / "bad.jsonl", rows)
    code, out, err = _evaluate(path, data_root, capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert f"{path}:{line}: expected {expected}" in err


def _d1(**fields: list) -> list[dict]:
    """Gold predictions with D1's fields replaced (D1 has the words 0..8, D2 0..4)."""
    rows = _gold()
    rows[0].update(fields)
    return rows


# predictions no model produces (issue 20): each is an error naming file, line, document and what was expected
IMPOSSIBLE = [
    (_d1(entities=[[0, 0, "Generic"], [2, 3, "Method"], [5, 5, "Generic"], [7, 7, "Gene"]]),
     "an entity type of SciERC (Generic, Material"),
    (_d1(relations=[[0, 0, 2, 3, "USED-FOR"], [7, 7, 5, 5, "CAUSES"]]), "a relation type of SciERC (COMPARE"),
    (_d1(entities=[[0, 0, t] for t in ("Generic", "Material", "Method", "Metric", "OtherScientificTerm", "Task")],
         relations=[], clusters=[]), "one type per span (span [0, 0] is also 'Generic')"),
    (_d1(entities=[[0, 0, "Generic"], [0, 0, "Generic"]], relations=[], clusters=[]), "one type per span"),
    (_d1(entities=[[-1, 0, "Generic"]], relations=[], clusters=[]), "an entity span within the document's words 0..8"),
    (_d1(entities=[[7, 9, "Generic"]], relations=[], clusters=[]), "an entity span within the document's words 0..8"),
    (_d1(entities=[[3, 2, "Generic"]], relations=[], clusters=[]), "with start <= end"),
    (_d1(relations=[[0, 0, 2, 30, "USED-FOR"]]), "a relation argument within the document's words"),
    (_d1(clusters=[[[2, 3], [5, 9]]]), "a coreference mention within the document's words 0..8"),
    (_d1(clusters=[[[2, 3], [5, 5]], [[5, 5], [7, 7]]]), "each mention in one cluster, once ([5, 5] is also in "
                                                         "cluster 0)"),
    (_d1(clusters=[[[2, 3], [5, 5], [2, 3]]]), "([2, 3] is twice in one cluster)"),
    (_d1(entities=[], clusters=[]), "relation arguments among the predicted entities (span [0, 0] is not one"),
]


@pytest.mark.parametrize(("rows", "expected"), IMPOSSIBLE, ids=[e.split(" (")[0] for _, e in IMPOSSIBLE])
def test_predictions_no_model_makes_are_errors_not_scores(tmp_path, data_root, capsys, rows, expected) -> None:
    path = _write(tmp_path / "odd.jsonl", rows)
    code, out, err = _evaluate(path, data_root, capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, (out, err)
    assert f"{path}:1: expected (document 'D1') " in err and expected in err, err


@pytest.mark.parametrize("extra", [(), ("--partial",)])
def test_an_empty_predictions_file_is_an_error_even_with_partial(tmp_path, data_root, capsys, extra) -> None:
    for name, text in (("empty.jsonl", ""), ("blank.jsonl", "\n \n")):
        path = tmp_path / name
        path.write_text(text)
        code, out, err = _evaluate(path, data_root, capsys, *extra)
        assert code == 2 and out == "" and f"{path}:1: expected at least one JSON object per document" in err, err


@pytest.mark.parametrize("argv", [
    ["scierc", "table", "--profile", "bogus"],
    ["scierc", "train", "--profile", "bogus"],
    ["scierc", "table", "-p", "bogus"],
])
def test_an_unknown_profile_is_one_line_listing_the_profiles(argv, capsys) -> None:
    code, out, err = _run(argv, capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "'--profile'" in err and "unknown profile 'bogus'" in err and PROFILES in err
    assert "Traceback" not in err


def test_an_unknown_split_is_one_line(tmp_path, data_root, capsys) -> None:
    code, _, err = _evaluate(_write(tmp_path / "gold.jsonl", _gold()), data_root, capsys, "--split", "valid")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "'--split'" in err and "train, dev, test" in err


def test_train_reads_options_from_a_config_file(tmp_path, capsys) -> None:
    """``--config`` (how a launched run receives its overrides): unknown keys are refused naming the file."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("epochs: 1\nnot_an_option: 3\n")
    code, _, err = _run(["scierc", "train", "--profile", "smoke", "--config", str(bad),
                         "--results-root", str(tmp_path / "r")], capsys)
    assert code == 2 and str(bad) in err and "not_an_option" in err and "SciERC options" in err
