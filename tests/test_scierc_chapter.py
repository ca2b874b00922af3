"""The Table 4 chapter alone on the smoke profile (papermill): our runs beside the paper's, the breakdowns,
the figures (the full smoke book in tests/test_notebooks.py covers it too, with every other chapter)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from medibio.book import build, notebook
from medibio.core.paths import REPO_ROOT
from medibio.paper import table4 as published
from medibio.paper import tables
from medibio.scierc import presets
from medibio.tasks import scierc as data
from tests.support.book import notebook_glue_keys

pytestmark = [pytest.mark.slow, pytest.mark.realdata]


def test_chapter_shows_ours_next_to_table4(tmp_path, data_root) -> None:
    import papermill

    papermill.execute_notebook(str(REPO_ROOT / "notebooks" / "table_4_scierc.ipynb"), str(tmp_path / "out.ipynb"),
                               parameters={"profile": "smoke", "data_root": str(data_root),
                                           "results_root": str(tmp_path / "results")},
                               cwd=str(REPO_ROOT / "notebooks"), progress_bar=False,
                               kernel_manager_class=build.socket_kernels())
    s = notebook.read_summary(tmp_path / "results", "smoke", "table_4_scierc")
    assert s["tables"]["table4"]["rows"] == ["NER", "JRE", "Coref"]
    assert s["tables"]["ours_vs_table4"]["rows"] == ["NER", "JRE", "Coref", "REL+ (strict)"]
    assert "ours" in s["tables"]["ours_vs_table4"]["columns"]
    assert set(s["tables"]["ner_by_type"]["rows"]) <= {"Generic", "Material", "Method", "Metric",
                                                       "OtherScientificTerm", "Task"}
    assert s["tables"]["runs"]["n_rows"] == 1 and s["values"]["seeds"] == 1
    for key in ("ours_ner_f1", "ours_rel_f1", "ours_relplus_f1", "ours_coref_f1"):
        assert 0.0 <= s["values"][key] <= 100.0
    assert s["reproductions"]["Table 4"]["status"].startswith("reproduced on this profile")
    for key in ("table4_bars", "ours_vs_table4", "dev_curve"):
        assert Path(s["figures"][key]).stat().st_size > 1000
    records = list((tmp_path / "results" / "scierc").rglob("seed1.json"))
    assert len(records) == 1 and json.loads(records[0].read_text())["kind"] == "scierc"
    record = json.loads(records[0].read_text())

    # prose numbers are glued from computations: Table 4's gains, the records' cost, the unreachable entities
    assert s["tables"]["table4_gains"]["rows"] == ["NER", "JRE", "Coref"]
    assert s["values"]["wall_total_s"] == pytest.approx(record["wall_time_s"], abs=0.1)
    width = presets.preset("smoke").max_span_width
    wide = sum(e - b + 1 > width for d in data.load_split("test", data_root) for b, e, _ in d.all_entities())
    assert s["values"]["unreachable_test_entities"] == wide > 0
    assert s["values"]["scierc_max_span_width"] == width and s["values"]["scierc_runs"] == 1
    gains = published.paper_gains(tables.load_table(4))
    assert s["values"]["t4_ner_diff"] == pytest.approx(gains.loc["NER", "v2 − v1"])
    assert s["glued"]["scierc_device"] == record["environment"]["device"]
    rows = s["tables"]["published"]["rows"]
    assert len(rows) == len(published.RESULTS) + 2 and rows[-2].startswith("SciDeBERTa v2")
    assert rows[-1].startswith("ours (smoke profile")
    named = notebook_glue_keys(tmp_path / "out.ipynb")
    assert len(named) > 40 and named <= set(s["glued"]), named - set(s["glued"])
