"""What ``medibio results verify``, ``drift`` and ``claims`` may take for a results root and what their advice
may say (a probe of hostile inputs on a fresh clone found three ways to mislead them):

1. advice that would delete good data: an intact ``.gz`` beside an edited plain copy called an orphan, the
   data root (it has a ``scierc/`` folder) taken for a results root and its gold files called orphans;
2. a record's own numbers not sealed: a ``score_test`` edited by +10 passed verify;
3. a missing, empty or wrong folder read as an empty state: ``claims`` printed a full table titled with that
   folder while its numbers came from ``reference/``.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from medibio.core.atomic import write_json
from medibio.core.hashing import files_fingerprint
from medibio.results import recorded
from medibio.results.verify import verify
from medibio.runs import records as rec
from medibio.tasks import loaders
from tests.conftest import HandRuns
from tests.support.cli import run_main
from tests.support.roots import not_a_results_root

REFERENCE = Path(__file__).resolve().parents[1] / "reference"
GAD_RUN = "finetune/cpu/minilm/base/GAD"  # one recorded run folder: seed1's record and gzipped predictions


def _reference_run(tmp_path: Path) -> Path:
    """A results root holding a copy of one recorded run of ``reference/`` (GAD, seed 1); its record's path."""
    folder = next(iter(sorted((REFERENCE / GAD_RUN).iterdir())))
    root = tmp_path / "results"
    shutil.copytree(folder, root / GAD_RUN / folder.name)
    assert verify(root).ok  # nothing wrong before the damage the test makes
    return root / GAD_RUN / folder.name / "seed1.json"


def _edit(path: Path, **changes: object) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    data.update(changes)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")


def _scored_run(hand_runs: HandRuns, seed: int = 1, wrong: range | set[int] = range(4)) -> rec.RunRecord:
    """A hand-made BioASQ run whose configuration fingerprints the made-up gold it was scored on, as a real
    run's does: what verify re-scores against."""
    record = hand_runs.write("base", seed, wrong=wrong)
    files = loaders.split_files("BioASQ", "test", hand_runs.data)
    record.config = {"data": files_fingerprint(files, root=hand_runs.data)}
    rec.add_digests(record, record.path(hand_runs.results).parent)
    rec.write_record(record, hand_runs.results)
    return record


# --------------------------------------------------------------------------- 1. advice that deletes good data


def test_an_edited_plain_copy_beside_the_intact_gz_keeps_the_gz(tmp_path: Path, capsys) -> None:
    path = _reference_run(tmp_path)
    packed = path.with_name("seed1.test.jsonl.gz")
    plain = path.with_name("seed1.test.jsonl")
    plain.write_bytes(gzip.decompress(packed.read_bytes()).replace(b'"prediction": "1"', b'"prediction": "0"', 3))
    found = verify(path.parents[6])
    assert len(found.problems) == 1, found.describe()
    problem = found.problems[0]
    assert problem.startswith(f"{plain} is not the file") and f"remove {plain.name}" in problem
    assert f"keep {packed.name}" in problem and "orphan" not in problem and f"{packed}:" not in problem
    code, out, _ = run_main(["results", "verify", str(path.parents[6]), "--no-rescore"], capsys)
    assert code == 1 and "1 problem(s)" in out
    plain.unlink()  # the advice followed: the intact copy is all there is, and it verifies
    assert verify(path.parents[6]).ok


def _data_root(tmp_path: Path) -> Path:
    """A made-up data root: BLURB and SciERC gold files, no run record."""
    root = tmp_path / "data"
    (root / "blurb" / "GAD").mkdir(parents=True)
    (root / "blurb" / "GAD" / "test.tsv").write_text("0\tsome text\t1\n")
    (root / "scierc").mkdir()
    for split in ("train", "dev", "test"):
        (root / "scierc" / f"{split}.json").write_text('{"doc_key": "D1"}\n')
    return root


@pytest.mark.parametrize("argv", [["results", "verify", "{root}"],
                                  ["results", "drift", "{root}", "--results-root", "{results}"],
                                  ["results", "drift", "{results}", "--results-root", "{root}"],
                                  ["results", "table", "--results-root", "{root}"]])
def test_a_data_root_is_no_results_root(tmp_path: Path, capsys, argv: list[str]) -> None:
    data = _data_root(tmp_path)
    results = _reference_run(tmp_path).parents[6]
    code, out, err = run_main([a.format(root=data, results=results) for a in argv], capsys)
    assert code == 2 and not out, out
    assert err.count("\n") == 1 and f"{data} is not a results root (it looks like a data root" in err
    assert (data / "scierc" / "train.json").is_file()


def test_a_folder_is_a_results_root_by_its_records_not_by_its_folder_names(tmp_path: Path, capsys) -> None:
    gold = tmp_path / "gold"
    (gold / "scierc").mkdir(parents=True)
    (gold / "scierc" / "train.json").write_text('{"doc_key": "D1"}\n')
    code, out, err = run_main(["results", "verify", str(gold)], capsys)
    assert code == 2 and "orphan" not in out + err and "it holds no run records" in err
    broken = gold / "finetune" / "cpu" / "seed1.json"  # named like a record, but none
    broken.parent.mkdir(parents=True)
    broken.write_text("{}")
    code, _, err = run_main(["results", "verify", str(gold)], capsys)
    assert code == 2 and "none of its 1 seed<N>.json files reads as a run record" in err and str(broken) in err


def test_an_orphan_is_never_simply_to_be_deleted(hand_runs: HandRuns) -> None:
    root = hand_runs.results
    kept = hand_runs.write("base", 1)
    rec.add_digests(kept, kept.path(root).parent)
    rec.write_record(kept, root)
    assert verify(root).ok
    folder = kept.path(root).parent
    stray = folder / "notes.txt"
    stray.write_text("x")
    (folder / "seed2.json").write_text("{not json")  # a record that does not read, and its predictions
    (folder / "seed2.test.jsonl").write_text('{"id": "q0", "prediction": "yes"}\n')
    text = "\n".join(verify(root).problems)
    assert f"{stray}: no run record names this file. It may be the evidence of a run" in text
    assert "delete the file only if no run of yours needs it" in text
    assert f"{folder / 'seed2.test.jsonl'}: the evidence of seed2.json beside it" in text
    assert "this file is not to be deleted" in text


# --------------------------------------------------------------------------- 2. a record is sealed as a whole


def test_every_written_record_is_sealed_and_an_edited_score_breaks_the_seal(hand_runs: HandRuns,
                                                                            tmp_path: Path, capsys) -> None:
    record = _scored_run(hand_runs)
    path = record.path(hand_runs.results)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["seal"] == rec.seal_of(data) == record.seal and rec.check_seal(path)
    assert rec.read_record(path).to_dict() == data  # the seal travels with the record
    found = verify(hand_runs.results)
    assert found.ok and found.with_seal == 1, found.describe()
    _edit(path, score_test=data["score_test"] + 10)
    found = verify(hand_runs.results)  # no data root: the seal alone says so
    assert len(found.problems) == 1 and found.problems[0].startswith(f"{path}: this run record is not the one")
    code, out, _ = run_main(["results", "verify", str(hand_runs.results), "--no-rescore"], capsys)
    assert code == 1 and "seal" in out
    with pytest.raises(rec.SealError):  # `results record` never seals an edited record anew
        recorded.record([rec.read_record(path)], hand_runs.results, tmp_path / "reference")


def test_an_unsealed_records_edited_score_is_found_by_re_scoring(hand_runs: HandRuns, tmp_path: Path,
                                                                 monkeypatch, capsys) -> None:
    record = _scored_run(hand_runs)  # 90.0: 4 of 40 answers wrong
    path = record.path(hand_runs.results)
    record.seal = ""
    write_json(path, record.to_dict())  # as records written before seals (reference/'s) are
    memo = tmp_path / "cache" / "rescored.json"
    found = verify(hand_runs.results, data_root=hand_runs.data, memo=memo)
    assert found.ok and found.rescored == 1 and found.with_seal == 0, found.describe()
    _edit(path, score_test=100.0)
    found = verify(hand_runs.results, data_root=hand_runs.data, memo=memo)
    assert len(found.problems) == 1, found.describe()
    assert "score_test is 100.0, re-scored 90.0" in found.problems[0] and str(path) in found.problems[0]
    monkeypatch.setenv("MEDIBIO_CACHE", str(tmp_path / "cache"))
    code, out, _ = run_main(["results", "verify", str(hand_runs.results), "--data-root", str(hand_runs.data)],
                            capsys)
    assert code == 1 and "score_test is 100.0, re-scored 90.0" in out
    assert json.loads(memo.read_text())  # scored once, remembered by the predictions' SHA-256


def test_re_scoring_leaves_out_gold_the_run_was_not_scored_on(hand_runs: HandRuns) -> None:
    _scored_run(hand_runs)
    gold = hand_runs.data / "blurb" / "BioASQ" / "test.tsv"
    gold.write_text(gold.read_text().replace("\tyes\n", "\tno\n", 1))  # another version of the gold
    found = verify(hand_runs.results, data_root=hand_runs.data)
    assert found.ok and found.rescored == 0, found.describe()
    assert found.not_rescored == {"the data root's gold files are not those the run was scored on": 1}


def test_add_digests_seals_what_it_migrates_and_the_result_verifies(hand_runs: HandRuns) -> None:
    record = hand_runs.write("base", 1, wrong=range(4))  # written before digests and seals
    path = record.path(hand_runs.results)
    record.seal = ""
    write_json(path, record.to_dict())
    assert not verify(hand_runs.results).ok
    found = verify(hand_runs.results, add_missing=True, data_root=hand_runs.data)
    assert found.sealed == [path] and rec.check_seal(path)
    again = verify(hand_runs.results, data_root=hand_runs.data)
    assert again.ok and again.with_seal == 1, again.describe()


@pytest.mark.realdata
def test_a_reference_records_score_edited_by_ten_fails_verify(tmp_path: Path, data_root: Path,
                                                              monkeypatch, capsys) -> None:
    path = _reference_run(tmp_path)
    recorded_score = json.loads(path.read_text())["score_test"]
    monkeypatch.setenv("MEDIBIO_CACHE", str(tmp_path / "cache"))
    code, out, _ = run_main(["results", "verify", str(path.parents[6]), "--data-root", str(data_root)], capsys)
    assert code == 0 and "1 record(s) agree" in out, out
    _edit(path, score_test=recorded_score + 10)
    code, out, _ = run_main(["results", "verify", str(path.parents[6]), "--data-root", str(data_root)], capsys)
    assert code == 1 and f"score_test is {recorded_score + 10!r}, re-scored {recorded_score!r}" in out


# --------------------------------------------------------------------------- 3. no runs is not an empty state


@pytest.mark.parametrize("make", ["missing", "file", "empty", "data root"])
def test_claims_refuses_a_folder_without_runs(tmp_path: Path, make: str, capsys) -> None:
    target = _data_root(tmp_path) if make == "data root" else not_a_results_root(tmp_path, make)
    code, out, err = run_main(["claims", "--results-root", str(target)], capsys)
    assert code == 2 and not out, out
    assert err.count("\n") == 1 and str(target) in err and "--results-root" in err and "reference" in err
