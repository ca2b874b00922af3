"""A re-execution against the recorded results: one small chapter re-executed on the ``cpu`` profile with an
empty results root, its runs compared with ``reference/`` through :func:`medibio.results.drift.drift`.

The chapter is Tables 1–2 (intermediate fine-tuning) narrowed by its own parameters to one seed, one
intermediate task (SICK-R) and a one-task transfer matrix: BIOSSES fine-tuned directly and after SICK-R,
the SICK-R stage and the frozen cosine baseline, about two minutes on two cores (the cheapest chapter
that trains and writes test predictions; Table 3 trains too, but a pretraining run has no predictions to
compare). Every run it makes must be a recorded run with the same configuration digest, or, on a CPU without
native bf16 (which trains in fp32 what was recorded in bf16), the same configuration but for its precision. Test predictions
are byte-identical where the thread count and the CPU's arithmetic are the same; the recorded BIOSSES runs
were computed on one thread beside the book's background process, and CI's machine is another CPU, so the
robust assertion is: identical, or a score difference inside the recorded seed spread (two standard
deviations of the recorded seeds), or, for a run with a single recorded seed (the frozen baseline, which
trains nothing), within 0.1 points.
"""

from __future__ import annotations

import math

import nbformat
import pytest

from medibio.book import build, chapters
from medibio.results import drift
from medibio.results.recorded import REFERENCE_ROOT
from medibio.runs import records
from medibio.runs.identity import RunKey

pytestmark = [pytest.mark.slow, pytest.mark.realdata]

PARAMETERS = {"profile": "cpu", "seeds": [1], "ift_tasks": ["SICK-R"], "stilt_tasks": ["BIOSSES"]}
NO_SPREAD_TOLERANCE = 0.1  # points, for runs recorded with one seed


def _config(root, row, column: str) -> dict:
    """The configuration of the run of ``row`` whose digest is in ``column``, as its record holds it."""
    key = RunKey(row["kind"], row["profile"], row["model"], row["variant"], row["dataset"], int(row["seed"]),
                 row[column])
    return records.read_record(key.path(root)).config


def _without_precision(config: dict) -> dict:
    """A configuration less the entries a CPU without native bf16 decides (fp32 there, bf16 where recorded):
    ``precision`` at any depth (``Plan.machine``)."""
    return {k: _without_precision(v) if isinstance(v, dict) else v for k, v in config.items() if k != "precision"}


def test_a_small_chapter_re_executed_on_cpu_lands_on_its_recorded_runs(tmp_path, data_root) -> None:
    import papermill

    results = tmp_path / "results"
    entry = chapters.get("tables_1_2_intermediate_finetuning")
    out = tmp_path / entry.output_name()
    papermill.execute_notebook(str(entry.source_path), str(out), kernel_name="python3", progress_bar=False,
                               cwd=str(tmp_path), parameters={**PARAMETERS, "results_root": str(results),
                                                              "data_root": str(data_root)},
                               kernel_manager_class=build.socket_kernels())
    code = [c for c in nbformat.read(out, as_version=4).cells if c.cell_type == "code"]
    assert not [o for c in code for o in c.outputs if o.output_type == "error"]

    frame = drift.drift(results, REFERENCE_ROOT, profile="cpu")
    ran = frame[frame["status"] != "only recorded"]
    assert set(ran["status"]) == {"both"}, ran[ran["status"] != "both"].to_string()  # every run was recorded
    for _, row in ran[ran["digest"] != ran["recorded digest"]].iterrows():  # ... with this very configuration,
        ours, recorded = (_config(root, row, column) for root, column in ((results, "digest"),  # but for what
                                                                          (REFERENCE_ROOT, "recorded digest")))
        assert _without_precision(ours) == _without_precision(recorded), row.to_string()  # the CPU decides
    assert {(k, v, d) for k, v, d in zip(ran["kind"], ran["variant"], ran["dataset"], strict=True)} == {
        ("finetune", "base", "BIOSSES"), ("finetune", "ift-SICK-R", "BIOSSES"), ("ift-stage", "SICK-R", "SICK-R"),
        ("frozen", "cosine", "BIOSSES")}
    compared = ran[ran["identical predictions"].notna()]
    assert len(compared) == 3, compared.to_string()  # the two fine-tuning runs and the baseline
    for _, row in compared.iterrows():
        if row["identical predictions"]:
            continue
        where = f"{row['kind']} {row['variant']} {row['dataset']} seed {row['seed']}: {row['difference']:+.3f}"
        if math.isnan(row["recorded std"]):
            assert abs(row["difference"]) <= NO_SPREAD_TOLERANCE, where
        else:
            assert row["inside seed spread"], f"{where} outside 2 x {row['recorded std']:.3f}"
    print(drift.summary(ran))
