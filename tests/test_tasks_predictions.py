"""Scoring prediction folders: file validation, id matching, aggregates, the CLI, and gold = 100 on real data.

The tiny data root under ``tests/fixtures/metrics/data`` holds four BLURB test files in their real formats:
GAD (4 pairs, gold 1 0 1 0), NCBI-disease (2 sentences), BIOSSES (4 pairs) and HoC (3 abstracts).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from medibio.cli.main import app, main
from medibio.core.errors import InputFormatError
from medibio.core.text import line_list
from medibio.tasks import predictions, registry
from medibio.tasks.predictions import read_predictions, score_directory, write_gold

FIXTURE_ROOT = Path(__file__).parent / "fixtures" / "metrics" / "data"
TINY = "GAD,NCBI-disease,BIOSSES,HoC"


def _write(path: Path, rows: list[object]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


def _gad(path: Path, labels: list[str], ids: tuple[str, ...] = ("0", "1", "2", "3")) -> Path:
    return _write(path, [{"id": i, "prediction": p} for i, p in zip(ids, labels, strict=True)])


@pytest.fixture()
def gold_dir(tmp_path: Path) -> Path:
    out = tmp_path / "gold"
    written, skipped = write_gold(out, data_root=FIXTURE_ROOT, datasets=TINY)
    assert [p.name for p in written] == ["GAD.jsonl", "NCBI-disease.jsonl", "BIOSSES.jsonl", "HoC.jsonl"]
    assert skipped == []
    return out


def test_gold_scores_100_and_aggregates_cover_what_is_there(gold_dir: Path) -> None:
    report = score_directory(gold_dir, data_root=FIXTURE_ROOT)
    # Pearson of a vector with itself is 1 up to rounding (1 - 1e-16 with some BLAS builds)
    assert report.scores == pytest.approx({"NCBI-disease": 100.0, "GAD": 100.0, "BIOSSES": 100.0, "HoC": 100.0})
    assert "BC5-chem" in report.missing and "PubMedQA" in report.missing and len(report.missing) == 9
    # only SS and DC are complete groups; NER (1/5) and RE (1/3) are partial
    assert report.group_averages == pytest.approx({"SS": 100.0, "DC": 100.0})
    assert report.partial_groups["NER"] == (pytest.approx(100.0), 1, 5)
    assert report.blurb_score.covered == ("SS", "DC") and not report.blurb_score.complete
    assert report.paper_average.value == pytest.approx(100.0) and len(report.paper_average.covered) == 4


def test_hand_made_gad_predictions(tmp_path: Path) -> None:
    # gold 1 0 1 0; predicted 1 1 0 0 -> TP 1, FP 1, FN 1 -> F1 1/2
    _gad(tmp_path / "GAD.jsonl", ["1", "1", "0", "0"])
    report = score_directory(tmp_path, data_root=FIXTURE_ROOT)
    assert report.metrics["GAD"]["score"] == pytest.approx(50.0)
    # GAD alone: the RE group is partial (1/3), so the BLURB score has nothing complete to average
    assert report.blurb_score.value is None and report.paper_average.value == pytest.approx(50.0)


def test_file_names_by_alias_and_folder_are_accepted(gold_dir: Path) -> None:
    (gold_dir / "HoC.jsonl").rename(gold_dir / "hoc.jsonl")
    (gold_dir / "NCBI-disease.jsonl").rename(gold_dir / "ncbi-disease.jsonl")
    report = score_directory(gold_dir, data_root=FIXTURE_ROOT)
    assert report.scores["HoC"] == 100.0 and report.scores["NCBI-disease"] == 100.0


def test_two_files_for_one_dataset_is_an_error(gold_dir: Path) -> None:
    (gold_dir / "HOC.jsonl").write_text((gold_dir / "HoC.jsonl").read_text())
    if len(list(gold_dir.glob("*.jsonl"))) == 4:  # case-insensitive file system: same file
        pytest.skip("file system is case-insensitive")
    with pytest.raises(InputFormatError, match="one prediction file for HoC"):
        score_directory(gold_dir, data_root=FIXTURE_ROOT)


def test_unrecognised_files_are_listed_not_scored(gold_dir: Path) -> None:
    _write(gold_dir / "notes.jsonl", [{"id": "x", "prediction": 1}])
    report = score_directory(gold_dir, data_root=FIXTURE_ROOT)
    assert [p.name for p in report.unrecognised] == ["notes.jsonl"]
    assert len(report.metrics) == 4


def test_missing_ids_are_named(tmp_path: Path) -> None:
    _gad(tmp_path / "GAD.jsonl", ["1", "0"], ids=("0", "1"))
    with pytest.raises(InputFormatError, match=r"4 test ids of GAD; missing ids 2: '2', '3'"):
        score_directory(tmp_path, data_root=FIXTURE_ROOT)


def test_extra_ids_are_named(tmp_path: Path) -> None:
    _write(tmp_path / "GAD.jsonl", [{"id": i, "prediction": "0"} for i in ("0", "1", "2", "3", "99", "x")])
    with pytest.raises(InputFormatError, match=r"ids not in the gold 2: '99', 'x'"):
        score_directory(tmp_path, data_root=FIXTURE_ROOT)


def test_many_missing_ids_are_summarised(tmp_path: Path) -> None:
    gold = predictions.Gold("GAD", "test", [str(i) for i in range(12)], ["0"] * 12)
    with pytest.raises(InputFormatError, match=r"missing ids 12: '0', '1', '2', '3', '4' \.\.\. and 7 more"):
        predictions.align(tmp_path / "GAD.jsonl", {}, gold)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('{"id": "2", "prediction": "1"', r"GAD.jsonl:3: expected a JSON object .*invalid JSON"),
        ('["2", "1"]', r"GAD.jsonl:3: expected a JSON object with keys"),
        ('{"id": "2", "label": "1"}', r"GAD.jsonl:3: expected a JSON object with keys"),
        ('{"id": 2, "prediction": "1"}', r"GAD.jsonl:3: expected an id that is a non-empty string"),
        ('{"id": "2", "prediction": 1}', r"GAD.jsonl:3: expected prediction a label string from \{0, 1\}, got '1 \(JSON number\)'"),
        ('{"id": "2", "prediction": "yes"}', r"GAD.jsonl:3: expected prediction a label string"),
        ('{"id": "1", "prediction": "1"}', r"GAD.jsonl:3: expected each id once; '1' already on line 2"),
        ("", r"GAD.jsonl:3: expected a JSON object"),
    ],
)
def test_malformed_lines_name_file_and_line(tmp_path: Path, line: str, expected: str) -> None:
    path = _write(tmp_path / "GAD.jsonl",
                  [{"id": "0", "prediction": "1"}, {"id": "1", "prediction": "0"}, line,
                   {"id": "3", "prediction": "0"}])
    with pytest.raises(InputFormatError, match=expected):
        score_directory(tmp_path, data_root=FIXTURE_ROOT)
    assert path.is_file()


@pytest.mark.parametrize(
    ("lines", "expected"),
    [  # each decodes as a whole file: one object a line is checked, not assumed
        (['{"id": "1", "prediction": "0"}, {"id": "2", "prediction": "1"}', '{"id": "3", "prediction":', '"0"}'],
         r"GAD.jsonl:2: expected a JSON object .*invalid JSON \(Extra data\)"),
        (['{"id": "1", "prediction": "0", "id": "2"}', '{"id": "3", "prediction": "0"}'],
         r"GAD.jsonl:2: expected a JSON object .*invalid JSON \(key .+id.+ given twice\)"),
        (['{"id": "1", "prediction": "0"}', '{"id": "3", "prediction": 1e999}'],
         r"GAD.jsonl:3: expected a JSON object .*beyond what a 64-bit float holds"),
    ],
)
def test_what_a_line_alone_refuses_the_whole_file_refuses(tmp_path: Path, lines: list[str], expected: str) -> None:
    path = _write(tmp_path / "GAD.jsonl", [{"id": "0", "prediction": "1"}, *lines])
    with pytest.raises(InputFormatError, match=expected):
        read_predictions(path, "GAD")


def _either_way(path: Path, dataset: str) -> tuple[object, object]:
    """What read_predictions and the line-by-line reader alone make of a file: its predictions or its error."""
    spec = registry.get(dataset)
    found = []
    for read in (lambda: read_predictions(path, dataset),
                 lambda: predictions._read_line_by_line(path, line_list(path), spec, frozenset(spec.labels))):
        try:
            found.append(read())
        except InputFormatError as exc:
            found.append(str(exc))
    return found[0], found[1]


_PLAIN = {"NCBI-disease": ['{"id": "a", "prediction": ["O", "B", "I"]}', '{"id": "b", "prediction": []}'],
          "GAD": ['{"id": "a", "prediction": "1"}', '{"id": "b", "prediction": "0"}'],
          "HoC": ['{"id": "a", "prediction": ["Cellular energetics"]}', '{"id": "b", "prediction": []}'],
          "BIOSSES": ['{"id": "a", "prediction": 3.25}', '{"id": "b", "prediction": 0}']}
# Lines a file read at once must judge as the line-by-line reader does: keys given twice (plainly, escaped,
# as another object's), numbers no float holds or JSON refuses, values of every wrong type, extra keys, a
# label spelled with an escape, an id that reads like a key, two objects on a line
_ODD = ['{"id": "c", "prediction": "1", "id": "d"}', '{"id": "c", "i\\u0064": "d", "prediction": "0"}',
        '{"id": "c", "prediction": "0", "prediction": "1"}', '{"id": "c", "prediction": 1e999}',
        '{"id": "c", "prediction": NaN}', '{"id": "c", "prediction": -Infinity}', '{"id": "c", "prediction": ' +
        "9" * 400 + "}", '{"id": "c", "prediction": ' + "9" * 30 + "}", '{"id": "c", "prediction": true}',
        '{"id": "c", "prediction": null}', '{"id": "c", "prediction": {"id": "x"}}',
        '{"id": "c", "prediction": [["O"]]}', '{"id": "c", "prediction": ["O", "O"]}',
        '{"id": "c", "prediction": ["Cellular energetics", "Cellular energetics"]}',
        '{"id": "c", "prediction": "\\u0031"}', '{"id": "c", "prediction": ["\\u004f"]}',
        '{"id": "c", "prediction": "1", "score": 0.5}', '{"id": "id", "prediction": "1"}',
        '{"id": "prediction", "prediction": []}', '{"id": "", "prediction": "1"}', '{"id": 3, "prediction": "1"}',
        '{"id": "a", "prediction": "1"}', '{"id": "c", "prediction": "1"}, {"id": "d", "prediction": "0"}',
        '{"id": "c", "prediction": 2.5}', '{"id": "c", "prediction": []}', '["c", "1"]', '', '   ', '{"id": "c"']


@pytest.mark.parametrize("dataset", sorted(_PLAIN))
def test_a_file_read_at_once_reads_as_line_by_line(tmp_path: Path, dataset: str) -> None:
    plain = _PLAIN[dataset]
    path = tmp_path / f"{dataset}.jsonl"
    path.write_text("\n".join(plain) + "\n")
    spec = registry.get(dataset)
    assert predictions._read_at_once(plain, spec.problem, frozenset(spec.labels)) is not None  # the fast way
    found, line_by_line = _either_way(path, dataset)
    assert found == line_by_line and [p.line for p in found.values()] == [1, 2]
    for odd in _ODD:
        for lines in ([*plain, odd], [odd, *plain], [plain[0], odd, odd.replace('"c"', '"e"')]):
            path.write_text("\n".join(lines) + "\n")
            found, line_by_line = _either_way(path, dataset)
            assert found == line_by_line, (lines, found, line_by_line)
            assert type(found) is type(line_by_line)


@pytest.mark.parametrize(
    ("dataset", "value"),
    [("NCBI-disease", "B O"), ("NCBI-disease", ["B", "X"]), ("HoC", "Cellular energetics"),
     ("HoC", ["Cellular energetics", "Cellular energetics"]), ("BIOSSES", "3.2"), ("BIOSSES", True),
     ("BIOSSES", None)],
)
def test_wrong_prediction_types(tmp_path: Path, dataset: str, value: object) -> None:
    path = _write(tmp_path / f"{dataset}.jsonl", [{"id": "1", "prediction": value}])
    with pytest.raises(InputFormatError, match=rf"{dataset}.jsonl:1: expected prediction"):
        read_predictions(path, dataset)


def test_token_count_mismatch_names_line_and_id(gold_dir: Path) -> None:
    path = gold_dir / "NCBI-disease.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows[1]["prediction"] = rows[1]["prediction"][:-1]
    _write(path, rows)
    with pytest.raises(InputFormatError, match=r"NCBI-disease.jsonl:2: expected 6 tags for example '1'"):
        score_directory(gold_dir, data_root=FIXTURE_ROOT)


def test_empty_file_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "GAD.jsonl").write_text("")
    with pytest.raises(InputFormatError, match="an empty file"):
        score_directory(tmp_path, data_root=FIXTURE_ROOT)


def test_cli_score_json_and_table(gold_dir: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["blurb", "score", str(gold_dir), "--data-root", str(FIXTURE_ROOT), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["datasets"]["HoC"]["score"] == 100.0 and data["datasets"]["HoC"]["metric"] == "hoc_micro_f1"
    assert data["blurb_score"] == {"value": 100.0, "covered": ["SS", "DC"],
                                   "missing": ["NER", "PICO", "RE", "QA"]}
    assert data["paper_average"]["value"] == 100.0 and len(data["missing"]) == 9
    result = runner.invoke(app, ["blurb", "score", str(gold_dir), "--data-root", str(FIXTURE_ROOT)])
    assert result.exit_code == 0, result.output
    assert "BLURB score (macro over groups): 100.00 (2/6; missing NER, PICO, RE, QA)" in result.output
    assert "missing prediction files: BC5-chem" in result.output


def test_cli_gold_then_error_exit_code(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["blurb", "gold", str(tmp_path), "--data-root", str(FIXTURE_ROOT),
                                 "--datasets", "GAD"])
    assert result.exit_code == 0 and "GAD.jsonl" in result.output
    assert json.loads((tmp_path / "GAD.jsonl").read_text().splitlines()[0]) == {"id": "0", "prediction": "1"}
    _gad(tmp_path / "GAD.jsonl", ["1"], ids=("0",))
    with pytest.raises(SystemExit) as exc:
        main(["blurb", "score", str(tmp_path), "--data-root", str(FIXTURE_ROOT)])
    assert exc.value.code == 2
    assert "missing ids 3: '1', '2', '3'" in capsys.readouterr().err


@pytest.mark.realdata
def test_real_gold_scores_100_everywhere(data_root: Path, tmp_path: Path) -> None:
    written, skipped = write_gold(tmp_path, data_root=data_root)
    assert len(written) == 13 and skipped == []
    report = score_directory(tmp_path, data_root=data_root)
    assert report.missing == []
    for name, m in report.metrics.items():
        assert m["score"] == pytest.approx(100.0), name
    assert report.blurb_score.complete and report.blurb_score.value == pytest.approx(100.0)
    assert report.paper_average.complete and report.paper_average.value == pytest.approx(100.0)
    # the scorer counts what the BLURB paper counts on the test sets (Table 3)
    for name, count in (("BC5-chem", 5385), ("BC5-disease", 4424), ("NCBI-disease", 960), ("BC2GM", 6325),
                        ("JNLPBA", 8662)):
        assert report.metrics[name]["gold_entities"] == count, name
    pico = report.metrics["EBM-PICO"]
    assert sum(pico[f"support_{c}"] for c in ("I-PAR", "I-INT", "I-OUT")) == 16364


@pytest.mark.parametrize("dataset", TINY.split(","))
def test_the_gold_read_from_rows_is_the_datasets_gold(dataset: str) -> None:
    """load_gold skips the ``datasets.Dataset``: the ids and references, values and types, are that table's."""
    from medibio.tasks import loaders

    table = predictions.gold_from_columns(dataset, "test", loaders.load_split(dataset, "test", FIXTURE_ROOT).to_dict())
    gold = predictions.load_gold(dataset, "test", FIXTURE_ROOT)
    assert gold == table and [type(r) for r in gold.references] == [type(r) for r in table.references]
