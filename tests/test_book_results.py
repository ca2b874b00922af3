"""The book's results tables on hand-made run records (no training): every score with its interval over test
examples, its provenance and its frozen baseline; IFT gains tested in the right direction; the IFT chain
chosen on dev; recorded GPU results beside a re-execution; the appendix's record index."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
import pytest
from typer.testing import CliRunner

from medibio.book import appendix, chapters, notebook, results
from medibio.cli.main import app
from medibio.core.settings import Settings
from medibio.results import aggregate
from medibio.results import ift as experiments
from medibio.results import recorded as reference
from medibio.runs.records import RunRecord

if TYPE_CHECKING:
    from conftest import HandRuns

BASELINE = experiments.BASELINE


def _frozen(score: float = 80.0, low: float = 75.0, high: float = 85.0, dataset: str = "BioASQ") -> pd.DataFrame:
    """A :func:`medibio.baselines.frozen.baselines` table by hand."""
    return pd.DataFrame([{"dataset": dataset, "frozen": score, "ci95_low": low, "ci95_high": high}])


@pytest.fixture()
def ift_runs(hand_runs: HandRuns) -> experiments.Runs:
    """BioASQ without IFT (65 and 67.5), after STS-B (95, 92.5; dev 80, 82) and after SICK-R (75, 75; dev 90):
    SICK-R is best on dev, STS-B on test."""
    w = hand_runs.write
    return {BASELINE: [w("base", 1, range(0, 40, 3), score_dev=70.0), w("base", 2, range(1, 40, 3), score_dev=70.0)],
            "STS-B": [w("ift-STS-B", 1, {0, 7}, score_dev=80.0), w("ift-STS-B", 2, {3, 11, 20}, score_dev=82.0)],
            "SICK-R": [w("ift-SICK-R", 1, range(0, 40, 4), score_dev=90.0),
                       w("ift-SICK-R", 2, range(2, 40, 4), score_dev=90.0)]}


def _bounds(text: str) -> tuple[float, float]:
    low, high = (float(x) for x in re.fullmatch(r"\[([-+\d.]+), ([-+\d.]+)\]", text).groups())
    return low, high


# --------------------------------------------------------------------------- beside_frozen


def test_beside_frozen_by_hand() -> None:
    frozen = pd.concat([_frozen(), _frozen(50.0, 40.0, 60.0, dataset="HoC")], ignore_index=True)
    rows = pd.Series(["BioASQ", "HoC", "BLURB score"], index=[7, 8, 9])
    out = aggregate.beside_frozen(rows, pd.Series([82.0, 45.5, 70.0], index=rows.index), frozen)
    assert list(out.index) == [7, 8, 9]
    assert list(out.columns) == list(results.FROZEN_COLUMNS)
    assert out.loc[7, "fine-tuning adds"] == pytest.approx(2.0) and out.loc[7, "below frozen"] is False
    assert out.loc[8, "fine-tuning adds"] == pytest.approx(-4.5) and out.loc[8, "below frozen"] is True
    assert out.loc[8, "frozen 95% CI"] == "[40.00, 60.00]"
    assert pd.isna(out.loc[9, "frozen encoder"]) and out.loc[9, "below frozen"] is None  # an aggregate row
    assert out.loc[9, "frozen 95% CI"] == ""


# --------------------------------------------------------------------------- IFT tables


def test_ift_table_tests_the_gain_in_its_own_direction(ift_runs, hand_runs: HandRuns) -> None:
    table = experiments.ift_table(ift_runs, hand_runs.results, hand_runs.data, frozen=_frozen(),
                                  paper={BASELINE: 60.0, "STS-B": 90.0})
    assert list(table.index) == [BASELINE, "STS-B", "SICK-R"]
    assert table["mean"].tolist() == pytest.approx([66.25, 93.75, 75.0])
    assert table["dev mean"].tolist() == pytest.approx([70.0, 81.0, 90.0])
    assert table["gain over baseline"].tolist() == pytest.approx([0.0, 27.5, 8.75])
    assert table.loc["STS-B", "diff (ours − paper)"] == pytest.approx(3.75) and pd.isna(table.loc["SICK-R", "paper"])
    # the gain's interval has the gain's sign: IFT minus the baseline, not the other way round
    low, high = _bounds(table.loc["STS-B", "95% CI of the gain"].replace("+", ""))
    assert 0 < low < 27.5 < high
    assert table.loc["STS-B", "significant"] == "yes" and table.loc["STS-B", "p"] < 0.05
    assert 0 < table.loc["SICK-R", "p"] <= 1 and table.loc["SICK-R", "significant"] in ("yes", "no")
    assert table.loc[BASELINE, "significant"] == "" and pd.isna(table.loc[BASELINE, "p"])
    # every row has its own interval over the test questions, around its mean
    for label, mean in table["mean"].items():
        low, high = _bounds(table.loc[label, "95% CI (test)"])
        assert low < mean < high, label
    # the frozen baseline beside every row, and the rows under it flagged
    assert (table["frozen encoder"] == 80.0).all() and (table["frozen 95% CI"] == "[75.00, 85.00]").all()
    assert table["below frozen"].tolist() == [True, False, True]
    assert results.below_frozen(table) == ["SICK-R", BASELINE]
    assert (table["commit"] == "c0ffeec0").all() and (table["digest"] == "5eed5eed5eed").all()
    assert list(table.columns)[-2:] == ["digest", "commit"]


def test_ift_table_without_predictions_root_has_no_test_columns(ift_runs) -> None:
    table = experiments.ift_table(ift_runs)
    assert not {"p", "significant", "95% CI (test)", "95% CI of the gain", "frozen encoder"} & set(table.columns)
    assert table.loc["STS-B", "gain over baseline"] == pytest.approx(27.5)


def test_ift_table_takes_frozen_tables_by_model_name(ift_runs, hand_runs: HandRuns) -> None:
    table = experiments.ift_table(ift_runs, hand_runs.results, hand_runs.data, frozen={"minilm": _frozen(70.0)})
    assert table["below frozen"].tolist() == [True, False, False]


def test_best_intermediate_is_chosen_on_dev_not_test(ift_runs) -> None:
    assert experiments.ift_table(ift_runs)["mean"].drop(index=BASELINE).idxmax() == "STS-B"  # the test score
    assert experiments.best_intermediate(ift_runs) == "SICK-R"  # the dev score
    no_dev = {label: [RunRecord.from_dict({**r.to_dict(), "score_dev": None}) for r in recs]
              for label, recs in ift_runs.items()}
    assert experiments.best_intermediate(no_dev) is None


def _matrix(ift_runs: experiments.Runs) -> dict[str, experiments.Runs]:
    """A two-task transfer matrix: BioASQ after PubMedQA (the STS-B runs stand in), PubMedQA never run."""
    return {"BioASQ": {BASELINE: ift_runs[BASELINE], "PubMedQA": ift_runs["STS-B"]},
            "PubMedQA": {BASELINE: [], "BioASQ": []}}


def test_transfer_significance_tests_every_cell_against_its_row(ift_runs, hand_runs: HandRuns) -> None:
    p = experiments.transfer_significance(_matrix(ift_runs), hand_runs.results, hand_runs.data)
    assert list(p.index) == ["BioASQ", "PubMedQA"] and list(p.columns) == ["BioASQ", "PubMedQA"]
    assert 0 < p.loc["BioASQ", "PubMedQA"] < 0.05
    assert p.isna().sum().sum() == 3  # the diagonal, and the target that has no runs


def test_transfer_table_gives_each_cell_its_interval_baseline_and_provenance(ift_runs, hand_runs) -> None:
    cells = experiments.transfer_table(_matrix(ift_runs), hand_runs.results, hand_runs.data, frozen=_frozen(90.0))
    assert cells.index.names == ["target", "intermediate"]
    row = cells.loc[("BioASQ", "PubMedQA")]
    assert row["mean"] == pytest.approx(93.75) and row["significant"] == "yes" and row["below frozen"] is False
    assert row["commit"] == "c0ffeec0" and _bounds(row["95% CI (test)"])[0] < 93.75
    assert cells.loc[("BioASQ", BASELINE), "below frozen"] is True
    assert results.below_frozen(cells) == [f"BioASQ / {BASELINE}"]
    assert pd.isna(cells.loc[("PubMedQA", "BioASQ"), "mean"])  # no runs: an empty row, no error


# --------------------------------------------------------------------------- BLURB result tables


def test_scores_table_has_interval_frozen_baseline_and_provenance(ift_runs, hand_runs: HandRuns) -> None:
    records = [r for recs in ift_runs.values() for r in recs]
    table = results.scores_table(records, hand_runs.results, hand_runs.data, frozen={"minilm": _frozen()})
    shown = results.shown(table, ["variant", "row"])
    assert list(shown.columns) == [*results.SHOWN, "covers", "note", "digest", "commit"]
    base = shown.loc[("base", "BioASQ")]
    assert base["mean"] == pytest.approx(66.25) and base["below frozen"] is True
    low, high = _bounds(base[results.TEST_INTERVAL])
    assert low < 66.25 < high and base["commit"] == "c0ffeec0" and base["digest"] == "5eed5eed5eed"
    assert shown.loc[("ift-STS-B", "BioASQ"), "fine-tuning adds"] == pytest.approx(13.75)
    aggregates = table[table["level"] != "dataset"]
    assert (aggregates[results.TEST_INTERVAL] == "").all() and aggregates["frozen encoder"].isna().all()
    with pytest.raises(ValueError, match="no frozen baselines for model 'minilm'"):
        results.scores_table(records, hand_runs.results, hand_runs.data, frozen={"other": _frozen()})


def test_versus_paper_and_the_chosen_ift_row(ift_runs, hand_runs: HandRuns) -> None:
    ours = results.scores_table(ift_runs[BASELINE], hand_runs.results, hand_runs.data,
                                frozen={"minilm": _frozen()}, aggregates=False)
    compared = results.versus_paper(ours, {"BioLinkBERT": {"BioASQ": 93.0, "HoC": 88.0}}, label="ours (direct)")
    assert list(compared.index) == ["BioASQ"] and compared.loc["BioASQ", "BioLinkBERT"] == 93.0
    ift = experiments.ift_table(ift_runs, hand_runs.results, hand_runs.data)
    chosen = experiments.best_intermediate(ift_runs)
    out = results.beside_ift(compared, ift, chosen, "BioASQ")
    assert list(out.columns) == ["BioLinkBERT", "ours (direct)", "ours (direct) ± (sd over seeds)",
                                 results.TEST_INTERVAL, "ours with IFT", "IFT gain", "95% CI of the IFT gain",
                                 "IFT gain p", "IFT gain significant", *results.FROZEN_COLUMNS, "digest", "commit"]
    assert out.loc["BioASQ", "ours with IFT"] == pytest.approx(75.0)  # SICK-R, chosen on dev
    assert out.loc["BioASQ", "IFT gain"] == pytest.approx(8.75) and out.loc["BioASQ", "IFT gain p"] > 0
    none = results.beside_ift(compared, ift, None, "BioASQ")
    assert pd.isna(none.loc["BioASQ", "ours with IFT"]) and none.loc["BioASQ", "IFT gain significant"] == ""


# --------------------------------------------------------------------------- recorded GPU results


def _chapter(slug: str, profile: str, root: Path) -> notebook.ChapterContext:
    """A chapter writing under ``root``, without a data root (its folder does not exist)."""
    settings = Settings(data_root=root / "no-data", results_root=root, progress=False)
    assert notebook.ChapterContext(name=slug, profile=profile, settings=settings).data_root is None
    return notebook.ChapterContext(name=slug, profile=profile, settings=settings)


def test_recorded_results_beside_a_re_execution(hand_runs: HandRuns, tmp_path: Path) -> None:
    w = hand_runs.write
    for seed, wrong in ((1, range(0, 40, 5)), (2, range(0, 40, 6)), (3, range(0, 40, 7))):  # 80, 82.5, 85
        w("base", seed, wrong, profile="gpu", device="cpu")
    ref = tmp_path / "reference"
    out = CliRunner().invoke(app, ["results", "record", "--profile", "gpu", "--results-root", str(hand_runs.results),
                                   "--reference-root", str(ref)])
    assert out.exit_code == 0, out.output
    assert f"3 record(s) of profile gpu copied to {ref}" in out.output
    recorded = reference.recorded("gpu", root=ref)
    assert [r.seed for r in recorded] == [1, 2, 3] and all(r.recorded for r in recorded)
    assert all(r.predictions_file(ref).is_file() for r in recorded)
    assert json.loads(recorded[0].path(ref).read_text())["environment"]["device"] == "cpu"

    # a build of the gpu profile re-executes the runs: 85 lies within two recorded std (2 x 2.5) of 82.5
    slug = chapters.chapter_of("Table 6").slug
    build = tmp_path / "build"
    ours = [w("base", 1, set(range(0, 40, 8)) | {1}, root=build, profile="gpu")]
    chapter = _chapter(slug, "gpu", build)
    chapter.reproduces("Table 6", ours, section="Our runs")
    # the same run in two of the chapter's lists (a direct run that an IFT table shows as its baseline) counts once
    versus = results.show_recorded(chapter, [*ours, *ours], "Table 6", "Our runs; Recorded GPU results", root=ref)
    row = versus.iloc[0]
    assert (row["recorded mean"], row["recorded seeds"], row["our mean"], row["our seeds"]) == (
        pytest.approx(82.5), 3, 85.0, 1)
    assert row["difference"] == pytest.approx(2.5) and row["inside seed spread"] and row["same configuration"]
    assert {"recorded", "recorded_vs_now"} <= set(chapter.tables)
    index = notebook.reproduction_index(build, "gpu")
    assert index.loc["Table 6", "status"] == "reproduced on this profile: 1 gpu run; recorded in reference/: 3 gpu runs"

    # a cpu build shows the recorded runs of the same variant and dataset, and compares nothing
    cpu_build = tmp_path / "cpu-build"
    cpu = _chapter(slug, "cpu", cpu_build)
    assert results.show_recorded(cpu, [w("base", 1, {0}, root=cpu_build)], "Table 6", "Recorded", root=ref) is None
    assert set(cpu.tables) == {"recorded"} and cpu.tables["recorded"]["n_rows"] == 1
    assert "recorded in reference/: 3 gpu runs" in notebook.reproduction_index(cpu_build, "cpu").loc["Table 6", "status"]
    # recorded runs a chapter lists twice: counted once, and no empty "rendered from recorded runs: " clause
    twice = _chapter(slug, "cpu", tmp_path / "twice")
    twice.reproduces("Table 6", [*recorded, *recorded])
    assert twice.reproductions["Table 6"]["status"] == "recorded in reference/: 3 gpu runs"
    # nothing recorded for these runs: a line says so, the index keeps what the chapter ran
    other = _chapter(slug, "cpu", tmp_path / "other")
    assert results.show_recorded(other, [w("ift-STS-B", 1, {0}, root=tmp_path / "other")], "Table 6", "R",
                                 root=ref) is None
    assert other.tables == {} and "Table 6" not in other.reproductions


# --------------------------------------------------------------------------- appendix B


def test_run_index_lists_every_kind_with_commit_and_freshness(hand_runs: HandRuns, settings: Settings) -> None:
    hand_runs.write("base", 1, {0})
    for kind, dataset in (("frozen", "BioASQ"), ("scierc", "SciERC")):
        record = RunRecord(dataset=dataset, model=hand_runs.MODEL, profile="cpu", seed=0, kind=kind, variant="probe",
                           score_test=50.0, config_digest="abcabcabcabc",
                           environment={"git_commit": "1234567890" * 4})
        record_path = record.path(hand_runs.results)
        record_path.parent.mkdir(parents=True, exist_ok=True)
        record_path.write_text(json.dumps(record.to_dict()))
    runs = appendix.run_index(hand_runs.results,
                              settings.replace(data_root=hand_runs.data, results_root=hand_runs.results))
    assert list(runs.columns) == list(appendix.INDEX_COLUMNS)
    assert sorted(runs["kind"]) == ["finetune", "frozen", "scierc"]
    assert set(runs["commit"]) == {"c0ffeec0", "12345678"}
    assert runs["freshness"].isin(["current", "stale", "legacy", "unknown"]).all()
    assert not any(p.startswith("/") for p in runs["record"])  # relative to the results folder
    assert (hand_runs.results / runs.loc[runs["kind"] == "frozen", "record"].iloc[0]).is_file()


def test_shown_path_never_prints_the_build_machine(tmp_path: Path) -> None:
    from medibio.core.paths import REPO_ROOT

    assert appendix.shown_path(REPO_ROOT / "results", Settings()) == "results/"
    settings = Settings(results_root=tmp_path)  # the session's results root, as $MEDIBIO_RESULTS names it
    assert appendix.shown_path(tmp_path, settings) == "$MEDIBIO_RESULTS"
    elsewhere = appendix.shown_path(tmp_path / "other", settings)
    assert str(tmp_path) not in elsewhere and elsewhere.startswith("$MEDIBIO_RESULTS")
