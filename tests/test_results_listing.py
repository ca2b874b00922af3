"""`medibio results list [--stale]`: a record made under a preset that has since changed is listed as stale,
with what changed; a record whose request cannot be planned here is shown as unknown (with why), never hidden.

Records are written from real plans (nothing is trained): the packaged MiniLM on the smoke profile, against an
empty data root (its files are fingerprinted as absent, the same way every time).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from medibio.cli.main import app
from medibio.core import profiles
from medibio.core.settings import Settings
from medibio.finetune import runner
from medibio.models import zoo as modelzoo
from medibio.results import listing
from medibio.runs import records as rec
from medibio.runs.protocol import Plan

CHANGE = "hyperparameters.epochs: 2 → 3"


def _write(plan: Plan, root: Path, score: float) -> rec.RunRecord:
    """The record a run of ``plan`` leaves (its identity fields exactly as the runner writes them)."""
    job = plan.job
    record = rec.RunRecord(dataset=job.spec.name, model=modelzoo.model_info(job.model), profile=job.profile.name,
                           seed=job.seed, variant=plan.key.variant, hyperparameters=job.config.to_dict(),
                           score_test=score, config_digest=plan.key.config_digest, config=plan.payload,
                           request=plan.request, details={"intermediate": list(job.chain)})
    rec.write_record(record, root)
    return record


def _smoke_epochs(monkeypatch: pytest.MonkeyPatch, epochs: int) -> None:
    """Change the smoke profile's preset epochs, as an edit of medibio/core/profiles.py would."""
    smoke = profiles.PROFILES["smoke"]
    monkeypatch.setitem(profiles.PROFILES, "smoke", dataclasses.replace(
        smoke, finetune_base={**smoke.finetune_base, "epochs": epochs}))


def _list(*args: str) -> str:
    result = CliRunner().invoke(app, ["results", "list", *args])
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture()
def roots(tmp_path: Path, settings: Settings) -> tuple[Path, Path, Settings]:
    data = tmp_path / "data"
    data.mkdir()
    return tmp_path / "results", data, settings.replace(data_root=data, results_root=tmp_path / "results")


def test_a_changed_preset_makes_the_record_stale_and_names_the_change(roots, monkeypatch) -> None:
    results, data, settings = roots
    old = _write(runner.plan_run("BIOSSES", "minilm", 1, "smoke", settings=settings), results, 40.0)
    assert old.hyperparameters["epochs"] == 2
    assert [listing.freshness(r, settings) for r in rec.load_records(results)] == [("current", "")]
    assert "no stale run records" in _list("--stale", "--results-root", str(results), "--data-root", str(data))

    _smoke_epochs(monkeypatch, 3)
    new_plan = runner.plan_run("BIOSSES", "minilm", 1, "smoke", settings=settings)
    assert new_plan.key.config_digest != old.config_digest  # the changed request runs into its own record
    assert rec.find_record(results, new_plan.key) is None

    state, changed = listing.freshness(rec.read_record(old.path(results)), settings)
    assert state == "stale" and CHANGE in changed.split("; ")

    rows = json.loads(_list("--stale", "--json", "--results-root", str(results), "--data-root", str(data)))
    assert len(rows) == 1
    (row,) = rows
    assert row["freshness"] == "stale" and row["digest"] == old.config_digest
    assert row["path"] == str(old.path(results)) and CHANGE in row["changed"].split("; ")

    text = _list("--stale", "--results-root", str(results), "--data-root", str(data))
    assert old.config_digest in text and str(old.path(results)) in text
    assert CHANGE in text and "1 stale" in text

    # the new preset's record is current; --stale still shows only the old one
    new = _write(new_plan, results, 45.0)
    everything = json.loads(_list("--json", "--results-root", str(results), "--data-root", str(data)))
    assert {(r["digest"], r["freshness"]) for r in everything} == {(old.config_digest, "stale"),
                                                                  (new.config_digest, "current")}
    stale = json.loads(_list("--stale", "--json", "--results-root", str(results), "--data-root", str(data)))
    assert [r["digest"] for r in stale] == [old.config_digest]


def test_stale_shows_records_that_cannot_be_checked_here_with_the_reason(roots, tmp_path) -> None:
    results, data, settings = roots
    folder = tmp_path / "my-model"
    shutil.copytree(modelzoo.minilm_path(), folder, ignore=shutil.ignore_patterns("1_Pooling", "*.md"))
    current = _write(runner.plan_run("BIOSSES", "minilm", 1, "smoke", settings=settings), results, 40.0)
    gone = _write(runner.plan_run("BIOSSES", str(folder), 1, "smoke", settings=settings), results, 41.0)
    shutil.rmtree(folder)  # the model the record was made with is no longer on this machine

    rows = json.loads(_list("--stale", "--json", "--results-root", str(results), "--data-root", str(data)))
    assert [r["path"] for r in rows] == [str(gone.path(results))]
    assert rows[0]["freshness"] == "unknown"
    assert "cannot plan its request here" in rows[0]["changed"] and str(folder) in rows[0]["changed"]
    text = _list("--stale", "--results-root", str(results), "--data-root", str(data))
    assert "[unknown]" in text and str(folder) in text and str(current.path(results)) not in text


def test_a_recorded_stage_of_a_pretraining_run_is_checked_without_its_weights(roots) -> None:
    """``reference/`` keeps no weights: the intermediate stages fine-tuned from the study's pretrained models
    are still planned again (their identity names the run, not its files), so none reads as unknown."""
    from medibio.results.recorded import REFERENCE_ROOT

    _, _, settings = roots
    settings = settings.replace(results_root=REFERENCE_ROOT)
    stages = [r for r in rec.load_records(REFERENCE_ROOT, kind="ift-stage")
              if r.request["model"].startswith(modelzoo.RUN_PREFIX)]
    assert stages, "reference/ holds intermediate stages of pretraining runs"
    assert not any((REFERENCE_ROOT / "pretrain").rglob("model")), "reference/ keeps no weights"
    states = {listing.freshness(r, settings)[0] for r in stages}
    assert "unknown" not in states, states


def test_a_record_whose_cpu_decided_another_precision_is_current_and_says_so(roots, monkeypatch) -> None:
    """A run recorded in fp32 on a CPU without bf16 is the run a CPU with bf16 would repeat in bf16: the same
    request, the machine's decision alone differs. It is current, with the note, not stale."""
    results, _, settings = roots
    monkeypatch.setattr(runner, "precision_for", lambda device=None, requested="auto": "no")
    old = _write(runner.plan_run("BIOSSES", "minilm", 1, "smoke", settings=settings), results, 40.0)
    assert old.config["precision"] == "no"
    monkeypatch.setattr(runner, "precision_for", lambda device=None, requested="auto": "bf16")
    state, note = listing.freshness(rec.read_record(old.path(results)), settings)
    assert state == "current"
    assert note == "recorded on a machine that decided precision no (this machine: as requested)"

    _smoke_epochs(monkeypatch, 3)  # anything else changed as well: stale, and both changes named
    state, changed = listing.freshness(rec.read_record(old.path(results)), settings)
    assert state == "stale" and CHANGE in changed.split("; ") and "precision" in changed
