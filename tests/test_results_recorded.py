"""Reference (recorded) results: recorded from a results root, read back as recorded, compared with a
re-execution. No GPU here, so the mechanism is shown with records made on the CPU (smoke profile)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from medibio.finetune import runner
from medibio.results import recorded as reference
from medibio.runs.records import RunRecord

MODEL = {"name": "m", "path": "/m", "tag": "m", "hash": "sha256:0", "model_type": "bert", "parameters": 1}


def _rec(seed: int, score: float, digest: str = "abcabcabcabc") -> RunRecord:
    return RunRecord(dataset="BIOSSES", model=MODEL, profile="gpu", seed=seed, score_test=score,
                     config_digest=digest, environment={"device": "cuda (NVIDIA H100) x1", "git_commit": "9" * 40})


def test_comparison_by_hand() -> None:
    recorded = [_rec(1, 80.0), _rec(2, 82.0), _rec(3, 84.0)]  # mean 82, std 2
    inside = reference.compare_with_recorded([_rec(1, 85.0)], recorded).iloc[0]
    assert inside["difference"] == pytest.approx(3.0) and inside["inside seed spread"]
    assert inside["same configuration"]
    outside = reference.compare_with_recorded([_rec(1, 87.0, digest="ffffffffffff")], recorded).iloc[0]
    assert outside["difference"] == pytest.approx(5.0) and not outside["inside seed spread"]  # 5 > 2 x 2
    assert not outside["same configuration"]
    single = reference.compare_with_recorded([_rec(1, 81.0)], [_rec(1, 80.0)]).iloc[0]
    assert single["inside seed spread"] is None  # one recorded seed: no spread to judge by
    frame = reference.recorded_frame(recorded)
    assert frame.iloc[0]["recorded mean"] == 82.0 and frame.iloc[0]["device"].startswith("cuda")
    # another profile's runs of the same variant and dataset, or another configuration: rows of their own
    other = RunRecord.from_dict({**_rec(4, 60.0).to_dict(), "profile": "cpu"})
    frame = reference.recorded_frame([*recorded, other, _rec(5, 70.0, digest="ffffffffffff")])
    assert sorted(zip(frame["profile"], frame["seeds"], frame["recorded mean"], strict=True)) == [
        ("cpu", 1, 60.0), ("gpu", 1, 70.0), ("gpu", 3, 82.0)]


@pytest.mark.realdata
def test_record_then_read_back_and_compare_a_re_execution(tmp_path, data_root, settings) -> None:
    results, ref = tmp_path / "results", tmp_path / "reference"
    settings = settings.replace(data_root=data_root, results_root=results)
    made = runner.run_finetune("BIOSSES", profile="smoke", seeds=[1, 2], settings=settings)
    written = reference.record(made, results, ref)
    assert len(written) == 2 and all(p.is_file() for p in written)
    back = reference.recorded("smoke", root=ref)
    assert [r.seed for r in back] == [1, 2] and all(r.recorded for r in back)
    assert all(r.predictions_file(ref).is_file() for r in back)  # predictions travel with the records
    stored = json.loads(written[0].read_text(encoding="utf-8"))
    environment = stored["environment"]
    assert environment["device"] and environment["versions"]["torch"]
    assert stored["config_digest"] == made[0].config_digest
    # a re-execution of the same configuration lands on the recording (deterministic on this CPU)
    again = runner.run_finetune("BIOSSES", profile="smoke", seeds=[1, 2],
                                settings=settings.replace(results_root=tmp_path / "again"))
    row = reference.compare_with_recorded(again, back).iloc[0]
    assert row["same configuration"] and math.isclose(row["difference"], 0.0, abs_tol=1e-9)
    assert row["inside seed spread"]


def test_both_pretraining_seeds_finished_together_are_recordable(tmp_path: Path) -> None:
    """A pretraining seed is part of its run's configuration: two seeds of one arm (each with its own digest)
    are both recorded, not only the newer one (#2's seeds finished within a minute of each other)."""
    import shutil

    from medibio.results.recorded import REFERENCE_ROOT, recordable

    shutil.copytree(REFERENCE_ROOT / "pretrain" / "study", tmp_path / "pretrain" / "study")
    found = [r for r in recordable(tmp_path, "cpu-study") if r.kind == "pretrain"]
    seeds = {(r.variant, r.seed) for r in found}
    assert {("study-2", 1), ("study-2", 2), ("study-3", 1), ("study-3", 2), ("study-4", 2)} <= seeds
    assert len({r.config_digest for r in found if r.variant == "study-2"}) == 2
    # neither seed counts as "another configuration" of the other; the pilot's (5M tokens) runs of #3 and #4
    # do, counted under the key a table row has (profile, model, variant, dataset), and so do the cs stage and
    # #1 made in fp32 on the Intel Xeon, which the bf16 runs made again on the AMD EPYC (session 10) replace, and
    # the pilot's #0 (0 steps, fp32), beside the study's #0 made in bf16 there; and #3's two fp32 runs on the
    # Intel Xeon, which the same runs made again in fp32 on an Intel Xeon with AMX replace (the same losses)
    from medibio.results.aggregate import newest_configurations
    from medibio.runs.records import load_records

    _, left_out = newest_configurations(load_records(tmp_path, kind="pretrain", legacy=False))
    assert left_out == {("study", "scratch", "study-3", "biomed-abstracts"): 3,
                        ("study", "scratch", "study-4", "biomed-fulltext"): 1, ("study", "minilm", "study-cs", "cs"): 2,
                        ("study", "study-cs-s1", "study-1", "biomed-abstracts"): 1,
                        ("study", "study-cs-s2", "study-1", "biomed-abstracts"): 1,
                        ("study", "scratch", "study-0", "biomed-abstracts"): 1}
