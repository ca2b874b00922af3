"""Experiments as named designs: the registry, Table 5 declared once at two scales, and a new Table 5 arm that
is declared in the experiment alone and seen by the study's status, the chapter's tables, the build's estimate
and the verdicts."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from medibio.core import profiles
from medibio.core.errors import UnknownNameError
from medibio.core.settings import Settings
from medibio.experiments import registry, table5
from medibio.experiments.table5 import SCALED_DOWN, STUDY, Arm
from medibio.runs import records

SOURCE = Path(__file__).resolve().parents[1] / "medibio"
# #5 of the paper at the study's scale: #4 continued on the abstracts (a stage: the same seed's #4 run)
FIFTH = Arm("5", "4", "biomed-abstracts", "abstract", "#5: #4 continued on SumPubMed abstracts", paper_row=5)


@pytest.fixture()
def fifth_arm(monkeypatch: pytest.MonkeyPatch) -> Arm:
    """The study with a sixth arm, declared in its design and nowhere else."""
    monkeypatch.setitem(STUDY.arms, FIFTH.id, FIFTH)
    return FIFTH


def test_experiments_are_looked_up_by_name() -> None:
    from medibio.experiments import ift
    from medibio.ift import variants

    assert registry.get("table5-study") is STUDY and registry.get("table5-scaled-down") is SCALED_DOWN
    assert registry.get("ift-recorded") is ift.RECORDED and ift.RECORDED.profile == profiles.IFT
    assert ift.RECORDED.arm(["STS-B"]) == "ift-STS-B" and ift.RECORDED.arm() == "base"
    assert variants.chain_of("ift-STS-B+SICK") == ["STS-B", "SICK"] and variants.chain_of("base") == []
    assert {"table5-study", "table5-scaled-down"} <= set(registry.names())
    with pytest.raises(UnknownNameError, match="unknown experiment 'table5-huge'; known: .*table5-study"):
        registry.get("table5-huge")
    with pytest.raises(ValueError, match="already registered"):
        registry.register(table5.Scale("table5-study", "another", {}, "{}", "{}"))


def test_the_two_scales_name_their_runs_from_one_declaration() -> None:
    assert [STUDY.variant(a) for a in STUDY.arms.values()] == [f"study-{a}" for a in ("0", "2", "3", "4", "cs", "1")]
    assert table5.study_variant("3", table5.PILOT_TOKENS) == "study-3-5M"
    assert STUDY.arm_of("study-3-5M") is STUDY.arms["3"] and STUDY.arm_of("study-cs") is STUDY.arms["cs"]
    assert STUDY.arm_of("pretrain-table5-3") is None and SCALED_DOWN.arm_of("study-3") is None
    assert SCALED_DOWN.variant(SCALED_DOWN.arm_for("#5")) == "pretrain-table5-5"
    assert SCALED_DOWN.tag(SCALED_DOWN.arm_for("#1")) == "table5-1"
    assert STUDY.profile == profiles.STUDY and SCALED_DOWN.profile is None
    assert STUDY.stage_of(STUDY.arms["1"]) is STUDY.arms["cs"] and STUDY.stage_of(STUDY.arms["2"]) is None
    assert SCALED_DOWN.in_order(["table5-5", "table5-1"]) == ["table5-4", "table5-5", "science", "table5-1"]


def test_each_run_name_and_the_study_profile_are_spelled_once_in_the_library() -> None:
    """``grep`` finds each variant pattern and the recorded experiments' profile names once outside the tests:
    whatever else names those runs asks the experiment."""
    text = {p: p.read_text(encoding="utf-8") for p in SOURCE.rglob("*.py")}
    for pattern in (r'"study-\{\}"', r'"pretrain-\{\}"', r'"table5-\{\}"', r'"cpu-study"', r'"cpu-ift"', r'"ift-"'):
        found = [p.relative_to(SOURCE).as_posix() for p, s in text.items() for _ in re.finditer(pattern, s)]
        assert len(found) == 1, (pattern, found)
    for spelled in (r"f\"study-\{", r"f\"pretrain-\{", r"\"pretrain-table5", r"startswith\(\"study-\"\)",
                    r"\"ift-(STS|GAD|Bio)", r"startswith\(\"ift"):
        assert not [p for p, s in text.items() if re.search(spelled, s)], spelled


def test_the_places_of_a_table5_claim_come_from_the_experiment(tmp_path: Path) -> None:
    roots = [tmp_path / "results", tmp_path / "reference"]
    found = [(p.scale.name, p.profile, p.a, p.b, p.root) for p in table5.places("#3", "#2", "gpu", roots)]
    assert found == [("table5-scaled-down", "gpu", "pretrain-table5-3", "pretrain-table5-2", roots[0]),
                     ("table5-study", profiles.STUDY, "study-3", "study-2", roots[0]),
                     ("table5-study", profiles.STUDY, "study-3", "study-2", roots[1])]
    # the study has no #5: a claim about #5 reads the scaled-down arms only
    assert [p.scale for p in table5.places("#5", "#4", "gpu", roots)] == [SCALED_DOWN]


def test_a_new_arm_declared_in_the_study_alone_is_seen_by_its_status_and_the_claims(fifth_arm: Arm,
                                                                                   tmp_path: Path) -> None:
    from medibio.experiments import study

    settings = study.work_settings(Settings(study_root=tmp_path, data_root=tmp_path / "no-data", progress=False))
    lines = study.status_lines(settings)
    assert "#5 seed 1: 0/1221 steps, 0.00 h; fine-tuned 0/21 runs, 0 frozen probes, 0.00 h" in lines
    assert "#5 seed 2: 0/1221 steps, 0.00 h; fine-tuned 0/21 runs, 0 frozen probes, 0.00 h" in lines
    # it continues #4, which has not run: its unit waits, naming the stage
    with pytest.raises(Exception, match="starts from the stage `4`, which has not finished"):
        study.run_unit(fifth_arm, 1, table5.TOKENS, settings)
    roots = [tmp_path / "results", tmp_path / "reference"]
    study_places = [p for p in table5.places("#5", "#4", "cpu", roots) if p.scale is STUDY]
    assert [(p.profile, p.a, p.b) for p in study_places] == [(profiles.STUDY, "study-5", "study-4")] * 2


def _tuned(root: Path, variant: str, dataset: str, seed: int, score: float) -> records.RunRecord:
    record = records.RunRecord(dataset=dataset, model={"name": f"pretrain-run:{variant}", "tag": f"{variant}-s1",
                                                       "hash": variant}, profile=profiles.STUDY, seed=seed,
                               variant=variant, config_digest=f"{abs(hash(variant)) % 10**12:012d}",
                               score_test=score, details={"pretraining_tokens": table5.TOKENS})
    records.write_record(record, root)
    return record


def test_a_new_arms_recorded_runs_reach_the_chapter_and_the_estimate(fifth_arm: Arm, tmp_path: Path) -> None:
    from medibio.book import estimate
    from medibio.book import study as chapter

    made = [_tuned(tmp_path, "study-5", "BC5-chem", seed, 90.0 + seed) for seed in (1, 2, 3)]
    assert [r.run_id for r in chapter.recorded_runs(tmp_path)["5"]] == [r.run_id for r in made]
    table = chapter.micro_table6(tmp_path)
    assert list(table.index) == ["ours #5", "paper #5"] and table.loc["ours #5", "BC5-chem"] == 92.0
    reads = estimate.chapters_reading(made[0], "cpu")
    assert {"tables_5_6_pretraining_configurations", "what_holds_up"} <= reads
