"""Grid search picks the point with the best mean dev score and keeps every point resumable."""

from __future__ import annotations

import json

import pytest

from medibio.finetune import grid
from medibio.runs import records as rec

pytestmark = pytest.mark.realdata


def test_grid_selects_on_dev_and_writes_a_summary(settings, data_root):
    tmp_path = settings.results_root
    out = grid.grid_search("BIOSSES", profile="smoke", learning_rates=(1e-5, 5e-4), batch_sizes=(8,),
                           epochs=(1,), settings=settings)
    summary = out["BIOSSES"]
    points = summary["points"]
    assert [(p["learning_rate"], p["batch_size"], p["epochs"]) for p in points] == [(1e-5, 8, 1), (5e-4, 8, 1)]
    best = max(points, key=lambda p: p["dev_mean"])
    assert summary["best"] == best and summary["selection"] == "mean dev score"
    for p in points:
        [record] = rec.load_records(tmp_path, variant=p["variant"])
        assert record.hyperparameters["learning_rate"] == p["learning_rate"]
        assert record.score_dev == p["dev_scores"][0]
    stored = json.loads((tmp_path / "grid" / "smoke" / "tiny-deberta" / "BIOSSES.json").read_text())
    assert stored["best"]["variant"] == best["variant"]
    # a rerun reuses every point's record
    again = grid.grid_search("BIOSSES", profile="smoke", learning_rates=(1e-5, 5e-4), batch_sizes=(8,),
                             epochs=(1,), settings=settings)
    assert again["BIOSSES"]["points"] == points
