"""Every chapter notebook executes on the smoke profile (papermill) and shows what it should.

The smoke book is built once per session into a temporary root (never the checkout's book/), with its
results root beside it; each chapter writes a ``summary.json`` naming the tables (with their rows), the
figures and the key numbers it showed, and the assertions below read those.
"""

from __future__ import annotations

import ast
import csv
import html
import re
from pathlib import Path

import nbformat
import pytest

from medibio.book import build, chapters, notebook
from tests.support import book as testing

pytestmark = [pytest.mark.slow, pytest.mark.realdata]


def _summary(smoke: dict, slug: str) -> dict:
    return notebook.read_summary(smoke["results_root"], "smoke", slug)


def _figure_ok(summary: dict, key: str) -> None:
    path = Path(summary["figures"][key])
    assert path.is_file() and path.stat().st_size > 1000, path


def test_every_chapter_executed(smoke) -> None:
    failures = [c for c in smoke["chapters"] if c["status"] == "failed"]
    assert not failures, "\n".join(f"{c['slug']}: cell {c['cell_index']} `{c['cell_source']}`: {c['error']}"
                                   for c in failures)
    statuses = {c["slug"]: c["status"] for c in smoke["chapters"]}
    assert statuses == {c.slug: ("executed" if c.is_notebook else "copied") for c in chapters.CHAPTERS}
    assert smoke["html_dir"] and (Path(smoke["html_dir"]) / "index.html").is_file()


@pytest.mark.parametrize("chapter", [c for c in chapters.CHAPTERS if c.is_notebook], ids=lambda c: c.slug)
def test_executed_notebook_has_outputs_and_no_errors(smoke, chapter) -> None:
    nb = nbformat.read(str(Path(smoke["root"]) / "book" / chapter.output_name()), as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code)
    outputs = [o for c in code for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert any(o.output_type in ("display_data", "execute_result") for o in outputs)
    parameters = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(parameters) == 1 and 'profile = "smoke"' in parameters[0].source  # papermill's values, merged
    assert not [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
    summary = _summary(smoke, chapter.slug)
    assert summary["profile"] == "smoke" and summary["results_root"] == smoke["results_root"]


@pytest.mark.parametrize("chapter", [c for c in chapters.CHAPTERS if c.is_notebook], ids=lambda c: c.slug)
def test_prose_numbers_are_glued_and_rendered(smoke, chapter) -> None:
    """Every key a markdown cell names was glued by the chapter on this profile (a missing one would fail the
    HTML build), and the page shows the glued text, not the role."""
    named = testing.notebook_glue_keys(Path(smoke["root"]) / "book" / chapter.output_name())
    glued = _summary(smoke, chapter.slug).get("glued", {})
    assert named <= set(glued), sorted(named - set(glued))
    page = (Path(smoke["html_dir"]) / "book" / f"{chapter.slug}.html").read_text(encoding="utf-8")
    page = page.translate(str.maketrans("‘’“”", "''\"\""))  # Sphinx's smart quotes, back to the glued text's
    assert "{glue" not in page
    for key in named:
        assert f'<span class="pasted-text">{html.escape(glued[key], quote=False)}</span>' in page, key


def test_audit_chapter(smoke) -> None:
    s = _summary(smoke, "appendix_a_paper_audit")
    assert s["values"]["checks"] >= 50
    assert 0 < s["values"]["inconsistent"] < s["values"]["checks"]
    assert {"claim", "table average", "table vs table"} <= set(s["tables"]["overview"]["rows"])
    assert s["tables"]["audit"]["n_rows"] == s["values"]["checks"]
    assert s["tables"]["inconsistent"]["n_rows"] == s["values"]["inconsistent"]
    # the mis-copied ChemProt cell of Table 7 is among the flagged rows
    assert any("Chem Prot" in row for row in s["tables"]["inconsistent"]["rows"])
    _figure_ok(s, "aggregate_readings")
    # the paper's quotes of other models against their own publications (the cross-source section)
    from medibio.paper import sources

    quoted, redone = sources.compare(), sources.recheck_claims()
    assert s["tables"]["sources_quotes"]["n_rows"] == s["values"]["quoted_numbers"] == len(quoted)
    for status in sources.COMPARISON_STATUSES:
        assert s["values"][f"quoted_{status.replace(' ', '_')}"] == int((quoted["status"] == status).sum()), status
    assert s["values"]["quoted_differs"] > 0  # BioLinkBERT's Table 7 column is not the one its authors publish
    assert {"NER", "QA", "BLURB score (macro over groups)"} <= set(s["tables"]["sources_groups"]["rows"])
    assert set(sources.GROUP_HEADERS.values()) <= set(s["tables"]["sources_groups"]["columns"])
    verdicts = (sources.HOLDS, sources.PARTIAL, sources.FAILS, sources.UNCHECKABLE)
    counts = {v: s["values"][f"claims_{v.replace(' ', '_')}"] for v in verdicts}
    assert counts == {v: int((redone["verdict"] == v).sum()) for v in verdicts}
    assert sum(counts.values()) == s["tables"]["sources_claims"]["n_rows"] == len(redone)
    assert counts[sources.FAILS] >= 1 and s["values"]["claims_changed"] >= 1  # the QA claim no longer holds
    assert s["tables"]["sources_claims"]["columns"] == list(sources.CLAIM_HEADERS.values())


def test_reproducibility_appendix(smoke, data_root) -> None:
    s = _summary(smoke, "appendix_b_reproducibility")
    listed = 0
    for listing in data_root.rglob("CHECKSUMS.tsv"):
        with open(listing, encoding="utf-8") as fh:
            listed += sum(1 for _ in csv.reader(fh, delimiter="\t")) - 1
    assert listed > 0 and s["values"]["checksum_files"] == listed
    assert s["values"]["checksum_mismatches"] == 0
    # the page opens with the table its first sentence counts from
    assert next(iter(s["tables"])) == "checked" and s["glued"]["b_reading"].strip()
    # what the stale records are, counted from this build's records (which ones depends on the machine)
    stale = s["glued"]["freshness_reading"]
    assert re.match(r"(All [\d,]+ records are current|[\d,]+ of [\d,]+ records are stale here: )", stale), stale
    assert "torch" in s["tables"]["versions"]["rows"]
    assert "git commit" in s["tables"]["environment"]["rows"]
    assert s["tables"]["manifests"]["n_rows"] >= 1
    assert s["tables"]["runs"]["n_rows"] == s["values"]["run_records"]
    # every kind of record the book made, with its commit and freshness, and no machine path on the page
    assert {"finetune", "frozen", "scierc", "ift-stage", "pretrain"} <= set(s["values"]["run_record_kinds"])
    assert {"commit", "freshness"} <= set(s["tables"]["runs"]["columns"]) and "score_test" not in s["tables"]["runs"]["columns"]
    assert all(row.endswith(".json") for row in s["tables"]["runs"]["rows"])  # by record path
    caption = s["tables"]["runs"]["caption"]
    assert smoke["results_root"] not in caption and "/tmp" not in caption and "$MEDIBIO_RESULTS" in caption
    # no table of the book's own builds: a chapter running beside the others could only show them half done
    assert not {"builds", "chapters"} & set(s["tables"])
    # the drift table: reference/ records no smoke run, and the table says so rather than vanishing
    assert s["values"]["drift_recorded_runs"] == s["tables"]["drift"]["n_rows"] == 0
    assert "no recorded runs of profile 'smoke'" in s["tables"]["drift"]["caption"]
    assert s["values"]["built"].startswith("**Re-executed on profile `smoke`** by commit")


def test_field_correlation_chapter(smoke) -> None:
    s = _summary(smoke, "figures_2_4_field_correlation")
    assert s["values"]["papers_with_field"] > 0 and s["values"]["multi_field"] > 0
    # the official 1,000-paper S2ORC sample already yields the paper's medicine group
    assert s["values"]["medicine_group"][0] == "Medicine"
    assert s["values"]["matches_paper"] is True
    assert {"medicine", "mathematics"} <= set(s["tables"]["groups"]["rows"])
    assert s["tables"]["closest_to_medicine"]["n_rows"] == 6
    # C and the union shares in percent, as the figures and the text give them
    assert "C(Medicine, j) (%)" in s["tables"]["closest_to_medicine"]["columns"]
    assert "share (%)" in s["tables"]["shares"]["columns"]
    for key in ("figure2", "figure3", "figure4"):
        _figure_ok(s, key)


def test_pretraining_chapter(smoke) -> None:
    s = _summary(smoke, "table_3_pretraining")
    assert s["tables"]["table3"]["columns"] == ["scideberta-v2", "medibiodeberta"]
    assert "batch size" in s["tables"]["table3"]["rows"]
    assert s["values"]["pretrain_status"] == "ok"  # a finished run's record (a killed one writes none)
    assert s["values"]["pretrain_steps"] > 0 and s["values"]["final_loss"] > 0
    _figure_ok(s, "lr_schedule")
    _figure_ok(s, "loss_curve")


def test_scierc_chapter(smoke) -> None:
    s = _summary(smoke, "table_4_scierc")
    assert s["tables"]["table4"]["rows"] == ["NER", "JRE", "Coref"]
    _figure_ok(s, "table4_bars")


def test_pretraining_configurations_chapter(smoke) -> None:
    s = _summary(smoke, "tables_5_6_pretraining_configurations")
    assert s["tables"]["table5"]["rows"] == ["#1", "#2", "#3", "#4", "#5"]
    assert s["tables"]["table6"]["n_rows"] == 14  # 13 datasets + BLURB Avg.
    assert s["values"]["run_rows"] >= 1  # smoke: BIOSSES with the tiny model
    assert "BIOSSES" in s["tables"]["budget"]["rows"] and "class_weighting" in s["tables"]["budget"]["columns"]
    rows = s["tables"]["ours_vs_paper"]["rows"]
    assert any("BIOSSES" in r for r in rows) and any("BLURB Avg." in r for r in rows)
    columns = s["tables"]["ours_vs_paper"]["columns"]
    assert {"frozen encoder", "frozen 95% CI", "fine-tuning adds", "below frozen"} <= set(columns)
    assert set(s["values"]["frozen"]) == set(s["values"]["scores"])  # a frozen baseline beside every score
    assert {"95% CI (test)", "digest", "commit"} <= set(columns)
    assert isinstance(s["values"]["below_frozen"], list)
    assert all(isinstance(v, float) for v in s["values"]["frozen"].values())
    _figure_ok(s, "table6_heatmap")
    _figure_ok(s, "ours_vs_paper")
    # the CPU study's section reads reference/'s records (no weights): the pilot's gate and its Table 6
    pilot = s["values"]["study_pilot"]
    assert set(pilot["scores"]) == {"0", "3", "4"} and isinstance(pilot["go"], bool)
    assert s["tables"]["study_pilot_table6"]["rows"] == ["ours #0", "ours #3", "paper #3", "ours #4", "paper #4"]
    assert {"ours #0", "ours #1", "paper #1", "ours #3", "paper #3", "ours #4", "paper #4"} <= \
        set(s["tables"]["study_table6"]["rows"])  # 10M runs, the floor and the science route among them
    probes = s["values"]["study_probes"]  # every fine-tuned model probed frozen on the seven large sets
    assert {"#3 frozen", "#4 frozen"} <= set(probes) and all(p["probes"] >= 7 for p in probes.values())
    made = s["tables"]["study_pretraining"]["rows"]
    assert all(any(f"'#{arm}'" in row for row in made) for arm in "034")
    _figure_ok(s, "study_curves")


def test_intermediate_finetuning_chapter(smoke) -> None:
    s = _summary(smoke, "tables_1_2_intermediate_finetuning")
    assert s["tables"]["ift_biosses"]["rows"] == ["none (baseline)", "STS-B", "SICK-R"]
    assert s["values"]["stilt_targets"] == 2
    assert s["tables"]["stilt_scores"]["rows"] == ["BIOSSES", "BioASQ"]
    # every score with its test interval, the gain's paired test, the frozen baseline and provenance
    ift_columns = s["tables"]["ift_biosses"]["columns"]
    assert {"95% CI (test)", "dev mean", "frozen encoder", "frozen 95% CI", "fine-tuning adds", "below frozen",
            "digest", "commit"} <= set(ift_columns)
    # one set of numbers per claim: the IFT gain is tested once, on the cpu-ift runs the chapter leads with
    assert not {"95% CI of the gain", "p", "significant"} & set(ift_columns)
    from medibio.book import claims

    ift_claims = [c.id for c in claims.CLAIMS if c.test.profile == "cpu-ift"]
    assert s["tables"]["ift_claims"]["rows"] == ift_claims and set(s["values"]["claim_verdicts"]) == set(ift_claims)
    _figure_ok(s, "ift_claims")
    assert set(s["values"]["ift_significant"]) <= {"STS-B", "SICK-R"}
    cells = s["tables"]["stilt_cells"]
    assert cells["n_rows"] == 4 and {"p", "significant", "95% CI (test)", "below frozen", "commit"} <= set(cells["columns"])
    assert 0 <= s["values"]["stilt_significant"] <= 2
    _figure_ok(s, "ift_biosses")
    _figure_ok(s, "stilt_gain")


def test_final_comparison_chapter(smoke) -> None:
    s = _summary(smoke, "table_7_blurb_comparison")
    assert s["tables"]["table7"]["columns"] == ["BioLinkBERT (base)", "SciDeBERTa v2 (full-FS)", "MediBioDeBERTa",
                                                "MediBioDeBERTa-IFT"]
    assert s["tables"]["ours_vs_table7"]["rows"] == ["BIOSSES"]  # smoke: the profile's one task
    assert {"95% CI (test)", "ours with IFT", "frozen encoder", "below frozen", "digest",
            "commit"} <= set(s["tables"]["ours_vs_table7"]["columns"])
    assert not {"IFT gain p", "IFT gain significant"} & set(s["tables"]["ours_vs_table7"]["columns"])
    assert s["values"]["best_ift_chain"] in ("STS-B", "SICK-R")
    assert "dev mean" in s["tables"]["ift_candidates"]["columns"]  # the chain is chosen on dev, shown beside test
    assert isinstance(s["values"]["below_frozen"], list)
    assert s["reproductions"]["Table 7"]["status"].startswith("reproduced on this profile")
    _figure_ok(s, "ours_vs_table7")


def test_first_page_indexes_every_artefact_from_the_chapters_records(smoke) -> None:
    s = _summary(smoke, "intro")
    # it opens with what the book finds, the claims page's own sentence, and a link there
    headline = s["glued"]["verdict_headline"]
    assert headline.startswith("This build's runs test ")
    assert headline == _summary(smoke, "what_holds_up")["glued"]["headline"]
    intro = (Path(smoke["html_dir"]) / "book" / "intro.html").read_text(encoding="utf-8")
    assert intro.index('href="what_holds_up.html"') < intro.index("What the paper claims")
    assert s["values"]["indexed_artefacts"] == len(chapters.ARTEFACTS)
    assert s["tables"]["index"]["rows"] == list(chapters.ARTEFACTS)
    # statuses come from what the chapters recorded: Table 6 from the Tables 5-6 chapter's run records
    t56 = _summary(smoke, "tables_5_6_pretraining_configurations")
    assert t56["reproductions"]["Table 6"]["runs"] >= 1
    # on smoke the scaled-down Table 5 experiments are off: Table 5 is the CPU study recorded in reference/
    assert t56["reproductions"]["Table 5"]["status"].startswith("recorded CPU study (")
    assert t56["reproductions"]["Table 5"]["section"] == "The Table 5 study on this CPU (recorded)"
    assert s["tables"]["profiles"]["rows"] == ["smoke", "cpu", "gpu", "paper", "cpu-ift", "cpu-study"]


def test_claims_chapter_judges_every_claim(smoke) -> None:
    from medibio.book import claims, rules

    s = _summary(smoke, "what_holds_up")
    assert s["tables"]["claims"]["rows"] == [c.id for c in claims.CLAIMS]
    assert s["tables"]["claims"]["columns"] == ["claim", "paper", "ours A − B [95%]", "verdict"]
    assert s["glued"]["headline"].startswith("This build's runs test ")
    assert set(s["values"]["verdicts"].values()) <= set(rules.VERDICTS)
    assert set(s["values"]["paper_verdicts"].values()) <= set(rules.PAPER_VERDICTS)
    # the smoke book runs BIOSSES with and without IFT: that claim is tested, whatever its verdict
    assert s["values"]["verdicts"]["ift-biosses"] != rules.NOT_TESTABLE
    _figure_ok(s, "differences")


def test_rendered_parameters_cell_shows_no_machine_path(smoke) -> None:
    for chapter in [c for c in chapters.CHAPTERS if c.is_notebook]:
        nb = nbformat.read(str(Path(smoke["root"]) / "book" / chapter.output_name()), as_version=4)
        cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
        values = {n.targets[0].id: ast.literal_eval(n.value) for n in ast.parse(cell.source).body
                  if isinstance(n, ast.Assign)}
        assert values["profile"] == "smoke", chapter.slug
        assert not [v for v in values.values() if isinstance(v, str) and "/" in v], chapter.slug


def test_pages_read_like_a_paper(smoke) -> None:
    """On every chapter's HTML page: one parameters cell, every other code cell collapsed (jupyter-book's
    hide-input, unless the notebook asks to show it) or without its code where it shows nothing (remove-input),
    and no value printed under a cell that glues numbers."""
    for chapter in [c for c in chapters.CHAPTERS if c.is_notebook]:
        page = (Path(smoke["html_dir"]) / "book" / f"{chapter.slug}.html").read_text(encoding="utf-8")
        cells = re.findall(r'<div class="cell( [^"]*)?"', page)
        assert cells, chapter.slug
        assert sum("tag_parameters" in c for c in cells) == 1, chapter.slug
        assert not [c for c in cells if "injected-parameters" in c], chapter.slug
        shown = [c for c in cells if not re.search(r"tag_(parameters|hide-input|show-input|remove-input)\b", c)]
        assert not shown, (chapter.slug, shown)
    intro = (Path(smoke["html_dir"]) / "book" / "intro.html").read_text(encoding="utf-8")
    blurb_datasets = _summary(smoke, "intro")["glued"]["blurb_datasets"]
    assert not re.search(rf"<pre>\s*(&#39;|')?{blurb_datasets}(&#39;|')?\s*</pre>", intro)


def test_a_changed_preset_reaches_the_page(tmp_path, data_root) -> None:
    """Change a fine-tuning value, re-execute the chapter: the page shows the new run's number and digest,
    and the old record is neither reused nor overwritten."""
    from medibio.runs import records

    entry = chapters.get("tables_5_6_pretraining_configurations")
    results = tmp_path / "results"
    shown = []
    for epochs in (1, 2):
        config = tmp_path / f"epochs{epochs}.yaml"
        config.write_text(f"epochs: {epochs}\n", encoding="utf-8")
        import os

        os.environ["MEDIBIO_RESULTS"] = str(results)
        try:
            done = build.execute_chapter(entry, tmp_path, {"profile": "smoke", "finetune_config": str(config)})
        finally:
            os.environ.pop("MEDIBIO_RESULTS")
        assert done.status == "executed", done.describe()
        summary = notebook.read_summary(results, "smoke", entry.slug)
        shown.append((summary["values"]["scores"]["BIOSSES"], summary["values"]["digests"]))
    stored = records.load_records(results, dataset="BIOSSES")
    assert len(stored) == 2 and {r.hyperparameters["epochs"] for r in stored} == {1, 2}
    by_digest = {r.config_digest: r for r in stored}
    for (score, [digest]), epochs in zip(shown, (1, 2), strict=True):
        assert by_digest[digest].hyperparameters["epochs"] == epochs and by_digest[digest].score_test == score
    assert shown[0][1] != shown[1][1]


# --- papermill straight on a source notebook, as a user would ------------------------------------------

def _papermill(source: Path, out: Path, **parameters):
    import papermill

    return papermill.execute_notebook(str(source), str(out), parameters=parameters, kernel_name="python3",
                                      progress_bar=False, cwd=str(out.parent),
                                      kernel_manager_class=build.socket_kernels())


def test_papermill_bad_profile_fails_in_the_first_cell_with_one_clear_error(tmp_path) -> None:
    from papermill.exceptions import PapermillExecutionError

    entry = chapters.get("appendix_a_paper_audit")
    with pytest.raises(PapermillExecutionError) as info:
        _papermill(entry.source_path, tmp_path / "audit.ipynb", profile="bogus")
    assert info.value.ename == "ParameterError"
    assert "unknown profile 'bogus'; known: smoke, cpu, gpu, paper" in info.value.evalue
    assert info.value.exec_count == 3  # parameters, injected parameters, then the set-up cell checks them


@pytest.mark.parametrize(("given", "message"), [
    ({"tasks": "B"}, "parameter tasks: unknown dataset 'B'"),
    ({"tasks": "BIOSSES,NOPE"}, "parameter tasks: unknown dataset 'NOPE'"),  # split on commas, not letters
    ({"seeds": "a,b"}, "parameter seeds: seeds are whole numbers, got 'a'"),
])
def test_papermill_bad_chapter_parameters(tmp_path, given, message) -> None:
    from papermill.exceptions import PapermillExecutionError

    entry = chapters.get("tables_5_6_pretraining_configurations")
    with pytest.raises(PapermillExecutionError) as info:
        _papermill(entry.source_path, tmp_path / "t56.ipynb", profile="smoke", **given)
    assert info.value.ename == "ParameterError" and message in info.value.evalue


def test_papermill_tasks_given_as_one_string_runs_that_dataset(tmp_path, data_root) -> None:
    """`-p tasks BIOSSES` arrives as a string: the set-up cell reads it as ["BIOSSES"] (not as the letters
    B, I, O, ...) and the chapter's own run cell fine-tunes BIOSSES. Only the chapter's parameters, set-up and
    run cells execute, from the source notebook, to keep it cheap."""
    import papermill

    entry = chapters.get("tables_5_6_pretraining_configurations")
    source = nbformat.read(entry.source_path, as_version=4)
    keep = {"t56-01", "t56-02", "t56-09"}  # parameters, set-up, "our runs"
    assert keep <= {c.get("id") for c in source.cells}
    source.cells = [c for c in source.cells if c.get("id") in keep]
    source.cells.append(nbformat.v4.new_code_cell("print(repr(params.tasks), sorted({r.dataset for r in records}))"))
    trimmed = tmp_path / "t56-trimmed.ipynb"
    nbformat.write(source, trimmed)
    out = tmp_path / "t56.ipynb"
    papermill.execute_notebook(str(trimmed), str(out), parameters={"profile": "smoke", "tasks": "BIOSSES",
                                                                   "results_root": str(tmp_path / "results"),
                                                                   "data_root": str(data_root)},
                               kernel_name="python3", progress_bar=False, cwd=str(tmp_path),
                               kernel_manager_class=build.socket_kernels())
    printed = "".join(o.get("text", "") for o in nbformat.read(out, as_version=4).cells[-1].outputs)
    assert printed.strip() == "['BIOSSES'] ['BIOSSES']"
    summary = notebook.read_summary(tmp_path / "results", "smoke", entry.slug)
    assert list(summary["values"]["scores"]) == ["BIOSSES"]


def test_papermill_smoke_profile_derives_everything_from_profile(tmp_path, data_root) -> None:
    """`-p profile smoke` alone gives the smoke pretraining run, as `medibio book --profile smoke` does."""
    import os

    entry = chapters.get("table_3_pretraining")
    os.environ["MEDIBIO_RESULTS"] = str(tmp_path / "results")
    try:
        _papermill(entry.source_path, tmp_path / "t3.ipynb", profile="smoke")
    finally:
        os.environ.pop("MEDIBIO_RESULTS")
    summary = notebook.read_summary(tmp_path / "results", "smoke", entry.slug)
    assert summary["values"]["pretrain_steps"] == 6  # the smoke config's max_steps, not mini's 150
    assert "'smoke' run" in summary["reproductions"]["Table 3"]["status"]
