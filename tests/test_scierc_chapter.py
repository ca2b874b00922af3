"""The Table 4 chapter alone on the smoke profile (papermill): our runs beside the paper's, the breakdowns,
the figures (the full smoke book in tests/test_notebooks.py covers it too, with every other chapter)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from medibio.book import notebook
from medibio.paths import REPO_ROOT

pytestmark = [pytest.mark.slow, pytest.mark.realdata]


def test_chapter_shows_ours_next_to_table4(tmp_path, data_root) -> None:
    import papermill

    papermill.execute_notebook(str(REPO_ROOT / "notebooks" / "table_4_scierc.ipynb"), str(tmp_path / "out.ipynb"),
                               parameters={"profile": "smoke", "data_root": str(data_root),
                                           "results_root": str(tmp_path / "results")},
                               cwd=str(REPO_ROOT / "notebooks"), progress_bar=False)
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
