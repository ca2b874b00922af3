"""Evidence that cannot be altered unnoticed (issue 39 §1, §3, §6): a record holds the digest of its test
predictions and every reader checks it; ``medibio results verify`` checks a results root as a whole
(``reference/`` included); a run made under ``--limit`` never stands in a table or a comparison as the
profile's runs; "nothing here" is an error, not an empty answer; a record filed under another profile's
folder is refused as such."""

from __future__ import annotations

import contextlib
import gzip
import json
import shutil
from pathlib import Path

import pytest

from medibio.core import provenance
from medibio.core.errors import InputFormatError, MedibioError
from medibio.core.settings import Settings
from medibio.results import drift, recorded, significance
from medibio.results.aggregate import results_table
from medibio.results.verify import verify
from medibio.runs import protocol
from medibio.runs import records as rec
from tests.conftest import HandRuns
from tests.support.cli import run_main
from tests.support.roots import not_a_results_root

REFERENCE = Path(__file__).resolve().parents[1] / "reference"


def _seal(record: rec.RunRecord, root: Path) -> Path:
    """Give a hand-written record the digest of its predictions, as the run protocol does."""
    rec.add_digests(record, record.path(root).parent)
    return rec.write_record(record, root)


def _flip_one_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    index = data.index(b"yes") if b"yes" in data else len(data) // 2
    data[index] = ord("Y") if data[index] == ord("y") else (data[index] ^ 1)
    path.write_bytes(bytes(data))


# --------------------------------------------------------------------------- reference/ as a whole


def test_reference_verifies_and_every_record_with_predictions_carries_their_digest() -> None:
    found = verify(REFERENCE)
    assert found.ok, found.describe()
    assert found.records >= 48 and found.files >= 41
    for path in REFERENCE.rglob("seed*.json"):
        record = rec.read_record(path)
        if record.predictions:
            assert record.digests.get(record.predictions), path


def test_one_edited_byte_in_a_copy_of_reference_fails_verify(tmp_path: Path, capsys) -> None:
    copy = tmp_path / "reference"
    shutil.copytree(REFERENCE, copy)
    victim = next(iter(sorted(copy.glob("finetune/cpu/minilm/base/BIOSSES/*/seed2.test.jsonl.gz"))))
    data = bytearray(gzip.decompress(victim.read_bytes()))  # edited inside, then compressed again
    data[len(data) // 2] ^= 1
    victim.write_bytes(gzip.compress(bytes(data)))
    code, out, _ = run_main(["results", "verify", str(copy)], capsys)
    assert code == 1
    assert str(victim) in out and "SHA-256 expected" in out and "seed2" in out
    assert "1 problem(s)" in out


def test_verify_finds_orphans_missing_files_unparsable_records_and_records_without_digests(
        hand_runs: HandRuns, capsys) -> None:
    root = hand_runs.results
    sealed = _seal(hand_runs.write("base", 1), root)
    unsealed = hand_runs.write("base", 2)  # written before digests: presence is all that can be checked
    gone = _seal(hand_runs.write("base", 3), root)
    gone.with_name("seed3.test.jsonl").unlink()
    orphan = sealed.with_name("seed9.test.jsonl")
    orphan.write_text("{}\n")
    broken = sealed.with_name("seed7.json")
    broken.write_text("{not json")
    sealed.with_name("seed1.lock").write_text("")  # the protocol's own: not an orphan
    found = verify(root)
    text = "\n".join(found.problems)
    assert not found.ok and len(found.problems) == 4, found.describe()
    assert f"{orphan}: no run record names this file" in text
    assert f"{gone.with_name('seed3.test.jsonl')}: missing" in text and "seed3" in text
    assert str(broken) in text
    assert f"{unsealed.path(root)}: names seed2.test.jsonl without its digest" in text
    # --add-digests seals the record that lacks one, never touches one that has one
    before = sealed.read_text()
    found = verify(root, add_missing=True)
    assert found.sealed == [unsealed.path(root)] and sealed.read_text() == before
    assert "without its digest" not in "\n".join(found.problems)
    code, out, _ = run_main(["results", "verify", str(root)], capsys)
    assert code == 1 and "3 problem(s)" in out


def test_an_unfinished_runs_work_folder_is_no_orphan_and_sealing_reports_a_missing_file(hand_runs: HandRuns) -> None:
    root = hand_runs.results
    sealed = _seal(hand_runs.write("base", 1), root)
    work = sealed.parent / ".seed2.work" / "encoder"  # a run killed (or still training): no record yet
    work.mkdir(parents=True)
    (work / "model.safetensors").write_bytes(b"partial")
    assert verify(root).ok, verify(root).describe()
    unsealed = hand_runs.write("base", 3)  # written before digests, and its predictions are gone
    unsealed.path(root).with_name("seed3.test.jsonl").unlink()
    found = verify(root, add_missing=True)  # one problem among the others, not the end of the check
    assert not found.ok and found.records == 2 and not found.sealed
    assert len(found.problems) == 1 and "seed3.test.jsonl" in found.problems[0], found.describe()


@pytest.mark.parametrize("make", ["missing", "file", "empty", "kind folder", "data root"])
def test_verify_refuses_what_is_no_results_root(tmp_path: Path, make: str, capsys) -> None:
    target = not_a_results_root(tmp_path, make)
    code, _, err = run_main(["results", "verify", str(target)], capsys)
    assert code == 2 and str(target) in err
    assert {"missing": "no such folder", "file": "a file", "empty": "it is empty",
            "kind folder": "give its parent", "data root": "looks like a data root"}[make] in err


# --------------------------------------------------------------------------- every reader checks


@pytest.mark.parametrize("damage", ["edit", "truncate", "delete", "replace by a folder"])
def test_altered_predictions_are_refused_wherever_they_are_read(hand_runs: HandRuns, tmp_path: Path,
                                                                damage: str) -> None:
    root = hand_runs.results
    record = hand_runs.write("base", 1, wrong={0, 1})
    _seal(record, root)
    other = tmp_path / "other"
    shutil.copytree(root, other)
    path = record.predictions_file(root)
    if damage == "edit":
        _flip_one_byte(path)
    elif damage == "truncate":
        path.write_bytes(path.read_bytes()[:20])
    elif damage == "delete":
        path.unlink()
    else:
        path.unlink()
        path.mkdir()
    names = f"{path}.*{record.run_id}" if damage in ("edit", "truncate") else f"{path}.*run record {record.run_id}"
    with pytest.raises(rec.EvidenceError, match=names.replace("[", r"\[").replace("]", r"\]")):
        record.predictions_file(root)
    with pytest.raises(rec.EvidenceError, match=names.replace("[", r"\[").replace("]", r"\]")):
        rec.checked_content(record, path)
    with pytest.raises(rec.EvidenceError, match=names.replace("[", r"\[").replace("]", r"\]")):
        rec.checked_sha256(record, path)  # the run pages' downloads: read once, checked, written
    with pytest.raises(rec.EvidenceError):  # the paired bootstrap of `results compare`, `table --bootstrap`
        significance.runs_of([record], root, "a", "BioASQ", hand_runs.data)
    with contextlib.suppress(MedibioError):  # the claims score files ahead, unchecked, as the book does ...
        significance.score_side_by_side([(path, "BioASQ")], hand_runs.data, wait=False)
    with pytest.raises(rec.EvidenceError):  # ... and the claim that reads the score checks the file first
        significance.runs_of([record], root, "a", "BioASQ", hand_runs.data)
    with pytest.raises(rec.EvidenceError):  # drift, predictions identical?
        drift.drift(root, other)
    with pytest.raises(rec.EvidenceError):  # `results record` copies only intact evidence
        recorded.record([record], root, tmp_path / "reference")


def test_intact_predictions_are_read_and_the_digest_reaches_the_reference_copy(hand_runs: HandRuns,
                                                                              tmp_path: Path) -> None:
    root = hand_runs.results
    record = hand_runs.write("base", 1, wrong={0, 1})  # no digest yet: `results record` adds it
    runs = significance.runs_of([record], root, "a", "BioASQ", hand_runs.data)
    assert runs is not None and runs.scores == [pytest.approx(95.0)]
    target = tmp_path / "reference"
    recorded.record([record], root, target)
    copied = rec.read_record(record.path(target))
    plain = record.path(root).with_name("seed1.test.jsonl")
    assert copied.digests == {"seed1.test.jsonl": rec.file_sha256(plain)}
    assert verify(target).ok


def test_recorded_predictions_are_gzipped_and_read_everywhere_as_the_file_their_record_names(
        hand_runs: HandRuns, tmp_path: Path) -> None:
    root = hand_runs.results
    record = rec.read_record(_seal(hand_runs.write("base", 1, wrong={0, 1}), root))
    plain = record.path(root).with_name("seed1.test.jsonl")
    target = tmp_path / "reference"
    recorded.record([record], root, target)
    packed = record.path(target).with_name("seed1.test.jsonl.gz")
    assert not packed.with_name("seed1.test.jsonl").exists()  # only the compressed copy
    assert gzip.decompress(packed.read_bytes()) == plain.read_bytes() and packed.stat().st_size < plain.stat().st_size
    first = packed.read_bytes()
    recorded.record([record], root, target)  # recording again writes the same bytes (no time stamp)
    assert packed.read_bytes() == first
    copied = rec.read_record(record.path(target))
    assert copied.predictions == "seed1.test.jsonl" and copied.predictions_file(target) == packed
    found = verify(target)
    assert found.ok and found.files == 1, found.describe()
    # the paired bootstrap reads the gzipped file as the plain one, and drift finds them identical
    runs = significance.runs_of([copied], target, "a", "BioASQ", hand_runs.data)
    assert runs is not None and runs.scores == [pytest.approx(95.0)]
    assert list(drift.drift(root, target)["identical predictions"]) == [True]
    assert rec.checked_content(copied, packed) == plain.read_bytes()  # the run pages' download of it
    assert rec.checked_sha256(copied, packed) == copied.digests["seed1.test.jsonl"]  # drift's, hashed once
    # a compressed file whose content differs is refused like a plain one
    packed.write_bytes(gzip.compress(plain.read_bytes().replace(b'"yes"', b'"no"', 1)))
    with pytest.raises(rec.EvidenceError, match="SHA-256 expected"):
        copied.predictions_file(target)
    packed.write_bytes(b"not gzip at all")
    with pytest.raises(InputFormatError, match=r"seed1.test.jsonl.gz: expected gzip-compressed data"):
        copied.predictions_file(target)


class _Toy:
    """A fine-tuning kind that trains instantly and writes predictions."""

    name = "finetune"

    def replan(self, request, settings):  # pragma: no cover - not replanned here
        raise NotImplementedError

    def describe(self, record) -> str:
        return "toy"

    def train(self, plan: protocol.Plan, context: protocol.RunContext) -> protocol.Outcome:
        record = context.record(model={"name": "toy"}, score_test=50.0, wall_time_s=0.0)
        return protocol.Outcome(record, [{"id": str(i), "prediction": i % 2} for i in range(30)])


def test_the_run_protocol_writes_the_digest_of_the_predictions(session_settings: Settings, tmp_path: Path) -> None:
    settings = session_settings.replace(results_root=tmp_path / "results")
    plan = protocol.plan("finetune", "smoke", "toy", "base", "BIOSSES", 1, {"lr": 1}, {"lr": 1}, "toy")
    record, reused = protocol.run(_Toy(), plan, settings)
    path = plan.key.predictions_path(settings.results_root)
    assert not reused and record.digests == {path.name: rec.file_sha256(path)}
    assert record.environment["cpu"] == provenance.cpu_model()  # the CPU model beside every number
    assert rec.read_record(plan.key.path(settings.results_root)).digests == record.digests
    assert verify(settings.results_root).ok


# --------------------------------------------------------------------------- a record in the wrong folder


def test_a_record_whose_profile_disagrees_with_its_folder_is_refused_as_such(hand_runs: HandRuns) -> None:
    root = hand_runs.results
    path = hand_runs.write("base", 1).path(root)
    data = json.loads(path.read_text())
    data["profile"] = "smoke"
    path.write_text(json.dumps(data))
    with pytest.raises(InputFormatError, match="its profile is 'smoke' but it is filed under 'cpu'"):
        rec.read_record(path)


# --------------------------------------------------------------------------- limited runs


def _limit(record: rec.RunRecord, root: Path, limit: int) -> rec.RunRecord:
    """Make ``record`` a run made under ``--limit limit`` (its request says so) and a newer one."""
    record.request = {**record.request, "limit": limit}
    record.created = "2999-01-01T00:00:00+00:00"
    rec.write_record(record, root)
    return record


def test_a_newer_limited_run_never_takes_the_place_of_the_profiles_runs(hand_runs: HandRuns) -> None:
    root = hand_runs.results
    for seed in (1, 2):
        hand_runs.write("base", seed, wrong=range(4))  # 90.0
    limited = _limit(hand_runs.write("base", 1, wrong=range(20), digest="11111111aaaa"), root, 8)
    assert limited.limited == 8 and rec.read_record(limited.path(root)).limited == 8
    row = results_table(root).query("row == 'BioASQ'").iloc[0]
    assert row["mean"] == pytest.approx(90.0) and row["n"] == 2
    assert "LIMITED" not in row["note"] and "1 other configuration(s) not shown (older, or made under --limit)" \
        in row["note"]
    system = significance.System.parse("cpu/minilm/base").records(root, "BioASQ")
    assert {r.limited for r in system} == {None}


def test_a_limited_run_alone_is_marked_and_stays_out_of_a_full_systems_aggregates(hand_runs: HandRuns) -> None:
    root = hand_runs.results
    _limit(hand_runs.write("base", 1, wrong=range(20)), root, 8)
    row = results_table(root).query("row == 'BioASQ'").iloc[0]
    assert row["note"].startswith("LIMITED run (--limit 8")
    # the smoke profile has a limit of its own: a run under it is the profile's run, not a limited one
    assert hand_runs.write("base", 1, profile="smoke").limited is None


def test_drift_keeps_a_limited_run_apart_from_the_recorded_full_run(hand_runs: HandRuns, tmp_path: Path) -> None:
    recorded_root = tmp_path / "recorded"
    hand_runs.write("base", 1, wrong=range(4), root=recorded_root)
    _limit(hand_runs.write("base", 1, wrong=range(20)), hand_runs.results, 8)
    frame = drift.drift(hand_runs.results, recorded_root)
    assert sorted(frame["status"]) == ["only here", "only recorded"]
    assert "cpu (--limit 8)" in set(frame["profile"])
    assert drift.paired(hand_runs.results, recorded_root, data_root=hand_runs.data).empty


def test_seeds_of_different_limits_are_never_pooled(hand_runs: HandRuns) -> None:
    root = hand_runs.results
    full = hand_runs.write("base", 1)
    limited = _limit(hand_runs.write("base", 2), root, 8)
    with pytest.raises(significance.SelectionError, match="different --limit values"):
        significance.runs_of([full, limited], root, "a", "BioASQ", hand_runs.data)
    runs = significance.runs_of([limited], root, "a", "BioASQ", hand_runs.data)
    assert runs is not None and "LIMITED" in runs.system


# --------------------------------------------------------------------------- "nothing here" is an error


def test_nothing_here_exits_non_zero_with_what_is_wrong(hand_runs: HandRuns, tmp_path: Path, capsys) -> None:
    root = hand_runs.results
    hand_runs.write("base", 1)
    empty = tmp_path / "empty"
    empty.mkdir()
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    cases = {
        ("results", "drift", str(root / "finetune"), "--results-root", str(root)): "give its parent",
        ("results", "drift", str(empty), "--results-root", str(root)): "it is empty",
        ("results", "drift", str(hand_runs.data), "--results-root", str(root)): "looks like a data root",
        ("results", "table", "--results-root", str(a_file)): "a file",
        ("results", "table", "--results-root", str(root), "--variant", "ift-STS-B"): "no fine-tuning run records",
    }
    for argv, says in cases.items():
        code, out, err = run_main(list(argv), capsys)
        assert code != 0 and says in err, (argv, out, err)
    # two systems with no dataset in common
    other = HandRuns(tmp_path / "other")
    other.write("base", 1)
    record = other.write("ift-STS-B", 1)
    moved = tmp_path / "results2"
    shutil.copytree(other.results, moved)
    path = record.path(moved)
    data = json.loads(path.read_text())
    data["dataset"] = "PubMedQA"
    target = path.parents[2] / "PubMedQA" / path.parent.name / path.name
    target.parent.mkdir(parents=True)
    target.write_text(json.dumps(data))
    shutil.move(str(path.with_name("seed1.test.jsonl")), target.with_name("seed1.test.jsonl"))
    shutil.rmtree(path.parents[1])
    code, _, err = run_main(["results", "compare", "cpu/minilm/ift-STS-B", "cpu/minilm/base", "--results-root",
                             str(moved), "--data-root", str(other.data)], capsys)
    assert code == 2 and "no dataset in common" in err, err


def test_a_build_from_a_recording_with_altered_evidence_stops_before_any_chapter(hand_runs: HandRuns,
                                                                                 session_settings: Settings,
                                                                                 tmp_path: Path) -> None:
    from medibio.book.build import build_book

    record = hand_runs.write("base", 1)
    _seal(record, hand_runs.results)
    _flip_one_byte(record.predictions_file(hand_runs.results))
    settings = session_settings.replace(results_root=tmp_path / "build", recorded=hand_runs.results)
    with pytest.raises(MedibioError, match=r"(?s)do not verify.*SHA-256 expected"):
        build_book("cpu", settings, root=tmp_path / "book", only=["intro"], html=False)
    assert not (tmp_path / "build").exists()
