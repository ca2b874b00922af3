"""The book's build machinery: chapter list, notebook sources, configuration, failure reporting, helpers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from medibio.book import appendix, assets, build, chapters, notebook, parameters
from medibio.core.errors import InputFormatError
from medibio.core.paths import REPO_ROOT
from medibio.core.settings import Settings

NOTEBOOK_CHAPTERS = [c for c in chapters.CHAPTERS if c.is_notebook]


def _nb(cells: list[str], with_parameters: bool = True) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    if with_parameters:
        params = nbformat.v4.new_code_cell('profile = "cpu"\ndata_root = ""\nresults_root = ""')
        params.metadata["tags"] = ["parameters"]
        nb.cells.append(params)
    nb.cells.extend(nbformat.v4.new_code_cell(src) for src in cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


# --- chapter list, _toc.yml, _config.yml ---------------------------------------------------------------

def test_toc_lists_the_chapters_in_order() -> None:
    toc = yaml.safe_load((REPO_ROOT / "_toc.yml").read_text(encoding="utf-8"))
    assert (REPO_ROOT / "_toc.yml").read_text(encoding="utf-8") == chapters.toc_yaml()
    assert toc["format"] == "jb-book"
    listed = [toc["root"], *(entry["file"] for part in toc["parts"] for entry in part["chapters"])]
    assert listed == [f"book/{c.slug}" for c in chapters.CHAPTERS]
    assert [part["caption"] for part in toc["parts"]] == list(chapters.PARTS)
    assert all(part["numbered"] for part in toc["parts"])


def test_every_figure_and_table_of_the_paper_has_a_chapter() -> None:
    for artefact in chapters.ARTEFACTS:
        entry = chapters.chapter_of(artefact)
        assert entry is not None and artefact.split()[0] in entry.title, artefact
        assert sum(artefact in c.artefacts for c in chapters.CHAPTERS) == 1
    # the paper's order: corpus, pretraining, SciERC, configurations, IFT, final comparison; the pages that
    # read the other chapters' summaries and records last (the index page, the claims)
    assert [c.slug for c in chapters.execution_order()][-2:] == ["intro", "what_holds_up"]


def test_config_renders_executed_notebooks_with_local_mathjax() -> None:
    config = yaml.safe_load((REPO_ROOT / "_config.yml").read_text(encoding="utf-8"))
    assert config["execute"]["execute_notebooks"] == "off"
    assert config["only_build_toc_files"] is True
    sphinx = config["sphinx"]["config"]
    assert "://" not in sphinx["mathjax_path"] and not sphinx["mathjax_path"].startswith("/")
    static = [REPO_ROOT / p for p in sphinx["html_static_path"]]
    assert assets.MATHJAX_STATIC in static
    assert sphinx["mathjax_path"] == f"mathjax/{assets.MATHJAX_ENTRY}"
    # jupyter-book would inject every .js under a top-level _static/ (MathJax included) into every page
    assert not (REPO_ROOT / "_static").exists()
    # hidden folders (.pytest_cache/README.md ...) are not reliably skipped by only_build_toc_files
    for excluded in (".*", "**/.*", ".venv", "notebooks", "medibio", "tests"):
        assert excluded in config["exclude_patterns"]


@pytest.mark.parametrize("chapter", chapters.CHAPTERS, ids=lambda c: c.slug)
def test_sources_exist_and_start_with_the_chapter_title(chapter: chapters.TocEntry) -> None:
    assert chapter.source_path.is_file(), chapter.source_path
    if chapter.is_notebook:
        first = nbformat.read(str(chapter.source_path), as_version=4).cells[0]
        assert first.cell_type == "markdown"
        heading = first.source.splitlines()[0]
    else:
        heading = chapter.source_path.read_text(encoding="utf-8").splitlines()[0]
    assert heading == f"# {chapter.title}"


@pytest.mark.parametrize("chapter", NOTEBOOK_CHAPTERS, ids=lambda c: c.slug)
def test_notebooks_are_committed_without_outputs(chapter: chapters.TocEntry) -> None:
    raw = json.loads(chapter.source_path.read_text(encoding="utf-8"))
    assert all("id" in cell for cell in raw["cells"]), "every cell needs an id (nbformat 4.5)"
    nb = nbformat.read(str(chapter.source_path), as_version=4)
    nbformat.validate(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, cell.source[:60]


@pytest.mark.parametrize("chapter", NOTEBOOK_CHAPTERS, ids=lambda c: c.slug)
def test_notebooks_open_with_a_parameters_cell(chapter: chapters.TocEntry, caplog) -> None:
    import papermill

    nb = nbformat.read(str(chapter.source_path), as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert "parameters" in code[0].metadata.get("tags", []), "the first code cell must be tagged parameters"
    assert sum("parameters" in c.metadata.get("tags", []) for c in nb.cells) == 1
    declared = papermill.inspect_notebook(str(chapter.source_path))
    assert {"profile", "data_root", "results_root"} <= set(declared)
    assert declared["profile"]["default"] == '"cpu"'
    assert "Unable to parse" not in caplog.text  # papermill could read every parameter line


def test_parameters_left_at_none_come_from_the_profile() -> None:
    names = ("tasks", "models", "seeds", "pretrain_config", "table5_experiments", "ift_tasks", "stilt_tasks")
    smoke = parameters.resolve("smoke", **dict.fromkeys(names))
    assert smoke.profile == "smoke" and smoke.tasks == ["BIOSSES"] and smoke.models == ["tiny-deberta"]
    assert smoke.seeds is None and smoke.pretrain_config == "smoke" and smoke.table5_experiments is False
    assert smoke.ift_tasks == ["STS-B", "SICK-R"] and smoke.stilt_tasks == ["BIOSSES", "BioASQ"]
    cpu = parameters.resolve("cpu", **dict.fromkeys(names))
    assert len(cpu.tasks) == 13 and cpu.models == ["minilm"] and cpu.pretrain_config == "mini"
    assert parameters.resolve("gpu", table5_experiments=None).table5_experiments is True


@pytest.mark.parametrize(("given", "expected"), [
    ({"tasks": "BIOSSES"}, ["BIOSSES"]),  # papermill -p tasks BIOSSES: a string, not characters
    ({"tasks": "BIOSSES, hoc"}, ["BIOSSES", "HoC"]),
    ({"tasks": ["QA"]}, ["PubMedQA", "BioASQ"]),
    ({"seeds": 2}, [2]),
    ({"seeds": "1,2"}, [1, 2]),
    ({"seeds": "[1, 2]"}, [1, 2]),  # papermill -p seeds "[1, 2]": list syntax arrives as text
    ({"seeds": "(3,)"}, [3]),
    ({"seeds": "[4294967295]"}, [4294967295]),
    ({"tasks": "['BIOSSES', 'hoc']"}, ["BIOSSES", "HoC"]),
    ({"tasks": "[BIOSSES, GAD]"}, ["BIOSSES", "GAD"]),  # names without quotes
    ({"models": '["tiny-deberta", "minilm"]'}, ["tiny-deberta", "minilm"]),
    ({"ift_tasks": "[STS-B]"}, ["STS-B"]),
    ({"stilt_seeds": "[1, 2, 3]"}, [1, 2, 3]),
    ({"stilt_tasks": "['GAD']"}, ["GAD"]),
    ({"table5_experiments": "true"}, True),
])
def test_parameters_accept_what_papermill_and_users_pass(given, expected) -> None:
    [(name, _)] = given.items()
    assert getattr(parameters.resolve("smoke", **given), name) == expected


@pytest.mark.parametrize(("profile", "given", "message"), [
    ("bogus", {}, "parameter profile: unknown profile 'bogus'; known: smoke, cpu, gpu, paper"),
    ("smoke", {"tasks": "B"}, "parameter tasks: unknown"),
    ("smoke", {"tasks": [1, 2]}, "parameter tasks: expected names"),
    ("smoke", {"seeds": "a,b"}, "parameter seeds: seeds are whole numbers, got 'a' in 'a,b'"),
    ("smoke", {"seeds": "[1, x]"}, "parameter seeds: seeds are whole numbers, got 'x' in '[1, x]'"),
    ("smoke", {"seeds": "[1, 2"}, "got '[1' in '[1, 2'"),  # the whole value, not only the fragment
    ("smoke", {"seeds": "[4294967296]"}, "seeds are whole numbers in [0, 4294967295], got 4294967296"),
    ("smoke", {"seeds": [-1]}, "in [0, 4294967295], got -1"),
    ("smoke", {"tasks": "[BIOSSES, NOPE]"}, "in '[BIOSSES, NOPE]'"),
    ("smoke", {"ift_tasks": "MNLI-not-here"}, "parameter ift_tasks:"),
    ("smoke", {"pretrain_config": "huge"}, "parameter pretrain_config: unknown pretraining config 'huge'"),
    ("smoke", {"table5_experiments": "maybe"}, "parameter table5_experiments: expected True or False"),
    ("smoke", {"finetune_config": "/no/such.yaml"}, "parameter finetune_config: no such file"),
    ("smoke", {"taks": ["BIOSSES"]}, "unknown chapter parameter(s) ['taks']"),
])
def test_bad_parameters_are_one_clear_error(profile, given, message) -> None:
    with pytest.raises(parameters.ParameterError) as info:
        parameters.resolve(profile, **given)
    assert message in str(info.value)


def test_chapter_lookup_by_slug_or_unique_part() -> None:
    from medibio.core.errors import MedibioError

    assert chapters.get("audit").slug == "appendix_a_paper_audit"
    assert chapters.get("appendix_b_reproducibility").title == "Appendix B: reproducibility"
    with pytest.raises(MedibioError, match="2 chapters match 'pretraining'"):
        chapters.get("pretraining")  # table_3_pretraining and tables_5_6_pretraining_configurations
    with pytest.raises(MedibioError, match="unknown chapter 'nonesuch'; known: intro, "):
        chapters.get("nonesuch")


# --- execution: failures are reported with their cell, the others still run ------------------------------

def test_a_failing_notebook_is_reported_with_its_cell_and_the_others_still_run(tmp_path, monkeypatch) -> None:
    src = tmp_path / "src"
    src.mkdir()
    nbformat.write(_nb(["x = 1", "raise ValueError('broken on purpose')", "y = 2"]), str(src / "bad.ipynb"))
    nbformat.write(_nb(["print(profile, results_root)"]), str(src / "good.ipynb"))
    (src / "page.md").write_text("# Page\n", encoding="utf-8")
    fake = (chapters.TocEntry("page", "Page", str(src / "page.md")),
            chapters.TocEntry("bad", "Bad", str(src / "bad.ipynb")),
            chapters.TocEntry("good", "Good", str(src / "good.ipynb")))
    monkeypatch.setattr(build, "CHAPTERS", fake)
    results = build.execute_all("smoke", Settings(results_root=tmp_path / "results"), book_dir=tmp_path / "book")
    by_slug = {r.slug: r for r in results}
    assert [r.slug for r in results] == ["page", "bad", "good"]
    bad = by_slug["bad"]
    assert bad.failed
    assert bad.cell_index == 2  # parameters cell 0, `x = 1` cell 1, the raising cell 2 (source numbering)
    assert bad.cell_source == "raise ValueError('broken on purpose')"
    assert bad.error == "ValueError: broken on purpose"
    assert "FAILED at cell 2" in bad.describe()
    assert by_slug["page"].status == "copied" and (tmp_path / "book" / "page.md").is_file()
    good = by_slug["good"]
    assert good.status == "executed"
    executed = nbformat.read(str(tmp_path / "book" / "good.ipynb"), as_version=4)
    # papermill's injected values are merged into the notebook's one parameters cell (medibio.book.pages)
    assert not [c for c in executed.cells if "injected-parameters" in c.metadata.get("tags", [])]
    shown = [c for c in executed.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(shown) == 1 and shown[0].source.splitlines()[0] == 'profile = "smoke"'
    # only the profile is injected: no machine path on the page, the settings travel as the kernel's environment
    assert 'results_root = ""' in shown[0].source and 'data_root = ""' in shown[0].source
    printed = "".join(o.get("text", "") for c in executed.cells if c.cell_type == "code" for o in c.outputs)
    assert printed.strip() == "smoke"


def test_a_build_from_recorded_results_executes_chapters_side_by_side_the_readers_after(tmp_path, monkeypatch) -> None:
    """Where two chapters may execute at once (a build from recorded results), they do, the longest expected
    first; a failure stays the failing chapter's; the pages that read the others start after all of them; and
    the results come in execution order."""
    src = tmp_path / "src"
    src.mkdir()
    stamp = ("import json, os, pathlib, time\nstart = time.time()\ntime.sleep({s})\n"
             "pathlib.Path('{slug}.times').write_text(json.dumps([start, time.time(), os.getcwd()]))")
    for slug, seconds in (("short", 0.5), ("long", 2.5), ("reader", 0.1)):
        nbformat.write(_nb([stamp.format(s=seconds, slug=slug)]), str(src / f"{slug}.ipynb"))
    nbformat.write(_nb(["raise ValueError('broken on purpose')"]), str(src / "bad.ipynb"))
    fake = (chapters.TocEntry("reader", "Reader", str(src / "reader.ipynb"), execute_last=True),
            chapters.TocEntry("short", "Short", str(src / "short.ipynb")),
            chapters.TocEntry("bad", "Bad", str(src / "bad.ipynb")),
            chapters.TocEntry("long", "Long", str(src / "long.ipynb")))
    monkeypatch.setattr(build, "CHAPTERS", fake)
    settings = Settings(results_root=tmp_path / "results", recorded=tmp_path / "recorded")
    assert chapters.at_once(settings, cores=2) == 2
    assert chapters.at_once(Settings(results_root=tmp_path / "results"), cores=2) == 1  # a build that trains
    monkeypatch.setattr(build, "at_once", lambda s: chapters.at_once(s, cores=2))
    started: list[str] = []

    here, moved, chdir = os.getcwd(), [], os.chdir

    def recorded_chdir(path: object) -> None:  # the working folder is the process's, shared by its threads
        moved.append(str(path))
        chdir(path)

    monkeypatch.setattr(os, "chdir", recorded_chdir)
    results = build.execute_all("smoke", settings, book_dir=tmp_path / "book", on_start=lambda c: started.append(c.slug),
                                expected={"long": 30.0, "short": 5.0, "bad": 1.0, "reader": 1.0})
    monkeypatch.undo()
    assert set(moved) <= {here}  # papermill's file reads "move" to where the process is; nothing moves it elsewhere
    assert [r.slug for r in results] == ["short", "bad", "long", "reader"]
    assert [r.status for r in results] == ["executed", "failed", "executed", "executed"]
    assert results[1].error == "ValueError: broken on purpose"
    assert started[:2] == ["long", "short"] and started[-1] == "reader"
    times = {slug: json.loads((tmp_path / "book" / f"{slug}.times").read_text()) for slug in ("short", "long", "reader")}
    assert times["short"][0] < times["long"][1] and times["long"][0] < times["short"][1]  # side by side
    assert times["reader"][0] >= max(times["short"][1], times["long"][1])
    assert {t[2] for t in times.values()} == {str(tmp_path / "book")}  # each kernel starts in the book's folder


def test_a_page_that_cannot_be_prepared_is_a_failed_chapter_not_a_crash(tmp_path, monkeypatch) -> None:
    src = tmp_path / "one.ipynb"
    nbformat.write(_nb(["1 + 1"]), str(src))

    def unparsable(path: Path) -> None:
        raise SyntaxError("invalid syntax in the parameters cell")

    monkeypatch.setattr(build.pages, "prepare_file", unparsable)
    result = build.execute_chapter(chapters.TocEntry("one", "One", str(src)), tmp_path, {"profile": "smoke"})
    assert result.failed and result.error == "preparing the page failed: SyntaxError: invalid syntax in the " \
        "parameters cell"
    assert (tmp_path / "one.ipynb").is_file()  # the execution itself is kept, as papermill wrote it


def test_missing_source_is_a_failure_not_a_crash(tmp_path) -> None:
    chapter = chapters.TocEntry("ghost", "Ghost", str(tmp_path / "ghost.ipynb"))
    result = build.execute_chapter(chapter, tmp_path, {"profile": "smoke"})
    assert result.failed and "missing source" in (result.error or "")


def test_unexecuted_copies_keep_the_toc_resolvable(tmp_path, monkeypatch) -> None:
    src = tmp_path / "one.ipynb"
    nbformat.write(_nb(["1 + 1"]), str(src))
    monkeypatch.setattr(build, "CHAPTERS", (chapters.TocEntry("one", "One", str(src)),))
    settings = Settings(results_root=tmp_path / "results")
    results = build.execute_all("smoke", settings, book_dir=tmp_path / "book", execute=False)
    assert [r.status for r in results] == ["copied"]
    again = build.execute_all("smoke", settings, book_dir=tmp_path / "book", execute=False)
    assert [r.status for r in again] == ["kept"]


def test_markdown_pages_are_refreshed_even_without_execution(tmp_path, monkeypatch) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Old\n")
    monkeypatch.setattr(build, "CHAPTERS", (chapters.TocEntry("page", "Page", str(page)),))
    settings = Settings(results_root=tmp_path / "r")
    build.execute_all("smoke", settings, book_dir=tmp_path / "book", execute=False)
    page.write_text("# New\n")
    results = build.execute_all("smoke", settings, book_dir=tmp_path / "book", execute=False)
    assert [r.status for r in results] == ["copied"]
    assert (tmp_path / "book" / "page.md").read_text() == "# New\n"


def test_build_failure_summary_keeps_the_cause() -> None:
    log = ("Running Sphinx\n\x1b[91mWarning, treated as error:\x1b[39;49;00m\n"
           "/repo/.pytest_cache/README.md:document isn't included in any toctree\n"
           + "".join(f"  File x{i}\n" for i in range(40)) + "RuntimeError: build failed\n")
    summary = build.failure_summary(log, tail=2)
    lines = summary.splitlines()
    assert lines[0] == "Warning, treated as error:"
    assert lines[1] == "/repo/.pytest_cache/README.md:document isn't included in any toctree"
    assert lines[-1] == "RuntimeError: build failed" and "File x10" not in summary


def test_stage_root_copies_configuration_and_links_mathjax(tmp_path) -> None:
    root = build.book_root(tmp_path / "root")
    assert (root / "_config.yml").read_text() == (REPO_ROOT / "_config.yml").read_text()
    assert (root / "_toc.yml").is_file()
    static = root / ".cache" / "mathjax" / "static"
    assert static.is_symlink() and static.resolve() == assets.MATHJAX_STATIC.resolve()


# --- assets ----------------------------------------------------------------------------------------------

def test_kernel_spec_points_at_this_interpreter(tmp_path) -> None:
    assert not assets.kernel_ready(tmp_path)
    spec_dir = assets.install_kernel(tmp_path)
    spec = json.loads((spec_dir / "kernel.json").read_text())
    assert spec["argv"][0] == sys.executable
    assert assets.kernel_ready(tmp_path)


def test_mathjax_is_detected_only_when_its_entry_file_exists(tmp_path) -> None:
    assert not assets.mathjax_ready(tmp_path)
    (tmp_path / "mathjax").mkdir()
    (tmp_path / "mathjax" / assets.MATHJAX_ENTRY).write_text("// MathJax")
    assert assets.mathjax_ready(tmp_path)


def test_missing_npm_gives_an_actionable_error(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(assets.shutil, "which", lambda name: None)
    with pytest.raises(assets.AssetError, match="npm"):
        assets.install_mathjax(tmp_path / "mj")


# --- notebook helpers and provenance ---------------------------------------------------------------------

def test_chapter_records_tables_figures_and_values(tmp_path, monkeypatch) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    monkeypatch.delenv("MEDIBIO_RESULTS", raising=False)
    chapter = notebook.setup("99_test", "smoke", "", str(tmp_path))
    assert chapter.settings.results_root == tmp_path and chapter.results_root == tmp_path
    frame = pd.DataFrame({"paper": [1.0, 2.0], "ours": [1.5, 1.0]}, index=["a", "b"])
    frame["diff (ours − paper)"] = frame["ours"] - frame["paper"]
    styler = chapter.table("cmp", frame, caption="A caption", paper_vs_ours=True)
    html = styler.to_html()
    assert "A caption" in html and "#1a7f37" in html and "#b42318" in html  # above/below the paper
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    chapter.figure("line", fig)
    chapter.value("answer", 42)
    summary = notebook.read_summary(tmp_path, "smoke", "99_test")
    files = {kind: str(tmp_path / "book" / "smoke" / "99_test" / "tables" / f"cmp.{kind}") for kind in ("csv", "json")}
    assert summary["tables"]["cmp"] == {"rows": ["a", "b"], "columns": list(frame.columns), "n_rows": 2,
                                       "caption": "A caption", "files": files}
    assert Path(summary["figures"]["line"]).stat().st_size > 0
    assert summary["values"]["answer"] == 42


def test_verify_checksums_flags_changed_and_missing_files(tmp_path) -> None:
    import hashlib

    folder = tmp_path / "blurb"
    folder.mkdir()
    (folder / "ok.tsv").write_text("a\tb\n")
    (folder / "changed.tsv").write_text("x\n")
    ok_hash = hashlib.sha256(b"a\tb\n").hexdigest()[:16]
    (folder / "CHECKSUMS.tsv").write_text(
        "path\tbytes\tsha256_16\tlines\n"
        f"ok.tsv\t4\t{ok_hash}\t1\n"
        "changed.tsv\t2\t0000000000000000\t1\n"
        "gone.tsv\t10\t0000000000000000\t1\n")
    table = appendix.verify_checksums(tmp_path).set_index("file")
    assert table.loc["ok.tsv", "status"] == "ok"
    assert table.loc["changed.tsv", "status"] == "sha256 differs"
    assert table.loc["gone.tsv", "status"] == "missing"
    assert set(table["folder"]) == {"blurb"}


def test_malformed_checksum_listing_names_file_and_line(tmp_path) -> None:
    listing = tmp_path / "CHECKSUMS.tsv"
    listing.write_text("path\tbytes\tsha256_16\tlines\nok.tsv\t4\tabc\t1\nbad.tsv\tmany\n")
    with pytest.raises(InputFormatError) as info:
        appendix.read_checksums(listing)
    assert info.value.line == 3 and info.value.path == listing


def test_versions_and_environment_tables(monkeypatch) -> None:
    from medibio.core import provenance

    monkeypatch.setattr(provenance, "PACKAGES", ("pandas", "surely-not-installed-pkg"))
    monkeypatch.setattr(provenance.versions, "__defaults__", (provenance.PACKAGES,))
    versions = appendix.versions()
    assert versions.loc["pandas", "version"] == pd.__version__
    assert versions.loc["surely-not-installed-pkg", "version"] == "not installed"
    env = appendix.environment()
    assert env.loc["executable", "value"] == sys.executable
    assert env.loc["cpu", "value"] == provenance.cpu_model() and "cpu features" in env.index


def test_the_environment_names_the_gpus_nvidia_smi_lists_without_importing_torch(tmp_path) -> None:
    tool = tmp_path / "nvidia-smi"
    tool.write_text("#!/bin/sh\nprintf 'NVIDIA H200\\nNVIDIA H200\\n'\n")
    tool.chmod(0o755)
    code = ("import sys; from medibio.book import appendix; print(appendix.environment().loc['gpu', 'value']); "
            "print('torch' in sys.modules)")
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO_ROOT,
                           env={**os.environ, "PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}"})
    assert shown.stdout.splitlines() == ["NVIDIA H200, NVIDIA H200", "False"]


# --- command line ----------------------------------------------------------------------------------------

def test_cli_help_and_profile_validation() -> None:
    from medibio.cli.main import app

    runner = CliRunner()
    result = runner.invoke(app, ["book", "--help"])
    assert result.exit_code == 0
    for option in ("--profile", "--only", "--no-execute", "--keep-going"):
        assert option in result.output
    bad = runner.invoke(app, ["book", "--profile", "huge"])
    assert bad.exit_code != 0
    assert "unknown profile 'huge'; known: smoke, cpu, gpu, paper" in " ".join(bad.output.replace("│", " ").split())


@pytest.mark.parametrize("chapter", NOTEBOOK_CHAPTERS, ids=lambda c: c.slug)
def test_notebook_defaults_are_the_cpu_book(chapter: chapters.TocEntry) -> None:
    """Run top to bottom in JupyterLab, a notebook does what `make book` (cpu profile) does: its profile is
    cpu and every other parameter defaults to "the profile's" (None) or an empty path."""
    import ast

    import papermill

    declared = papermill.inspect_notebook(str(chapter.source_path))
    assert ast.literal_eval(declared["profile"]["default"]) == "cpu"
    for name, spec in declared.items():
        if name != "profile":
            assert ast.literal_eval(spec["default"]) in (None, ""), name
            assert name in ("data_root", "results_root", *parameters.names()), name


def test_transfer_gain_subtracts_each_targets_baseline() -> None:
    from medibio.results import ift as transfer

    matrix = pd.DataFrame({transfer.BASELINE: [50.0, 80.0], "A": [None, 82.5], "B": [55.0, None]},
                          index=pd.Index(["A", "B"], name="target"))
    gain = transfer.transfer_gain(matrix)
    assert list(gain.columns) == ["A", "B"]
    assert gain.loc["A", "B"] == pytest.approx(5.0) and gain.loc["B", "A"] == pytest.approx(2.5)
    assert pd.isna(gain.loc["A", "A"])


def test_table5_stage_failure_names_the_command(tmp_path) -> None:
    from medibio.core.errors import MedibioError
    from medibio.experiments import scaled_down

    with pytest.raises(MedibioError, match="--config no-such-config"):
        scaled_down.pretrain_experiments("no-such-config", Settings(results_root=tmp_path))


def test_chapters_started_together_each_get_sockets_of_their_own(tmp_path) -> None:
    """Chapter kernels talk over Unix sockets named for each kernel (build.socket_kernels), not TCP ports:
    two executions started at once (two test workers, two builds) cannot meet on one port."""
    from concurrent.futures import ThreadPoolExecutor

    src = tmp_path / "one.ipynb"
    nbformat.write(_nb(["from ipykernel import get_connection_info\nprint(get_connection_info())"]), str(src))
    books = [tmp_path / f"book{i}" for i in range(2)]
    for book in books:
        book.mkdir()
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda b: build.execute_chapter(chapters.TocEntry("one", "One", str(src)), b,
                                                                {"profile": "smoke"}), books))
    assert [r.status for r in results] == ["executed", "executed"], [r.error for r in results]
    infos = []
    for book in books:
        cell = nbformat.read(str(book / "one.ipynb"), as_version=4).cells[-1]
        infos.append(json.loads("".join(o.get("text", "") for o in cell.outputs)))
    assert {i["transport"] for i in infos} == {"ipc"}
    assert infos[0]["ip"] != infos[1]["ip"] and all(i["ip"].startswith(tempfile.gettempdir()) for i in infos)
    assert not list(Path(tempfile.gettempdir()).glob(f"{Path(infos[0]['ip']).name}-*"))  # sockets cleaned up


def test_a_chapter_that_needs_data_fails_with_the_data_error_where_there_is_none(tmp_path, monkeypatch) -> None:
    """The field chapter once failed on a clone without ../shared/data with `None / str` (TypeError); a data
    path is asked of the chapter, which names the missing root and how to get one."""
    from medibio.core.errors import DataMissingError

    monkeypatch.delenv("MEDIBIO_RESULTS", raising=False)
    chapter = notebook.setup("99_test", "smoke", str(tmp_path / "no-data"), str(tmp_path / "results"))
    assert not chapter.has_data
    with pytest.raises(DataMissingError, match=r"missing data: .*no-data(.|\n)*MEDIBIO_DATA"):
        chapter.data_file("s2orc/metadata.jsonl")
    (tmp_path / "no-data").mkdir()
    assert chapter.data_file("s2orc/x.jsonl") == tmp_path / "no-data" / "s2orc" / "x.jsonl"


def test_the_build_report_keeps_the_estimate_beside_the_times_taken(monkeypatch, tmp_path):
    """What the estimate said before the build (each chapter on its own, the run pages), unrounded in build.json,
    so that a benchmark compares part by part; none where there was no estimate."""
    done = [build.ChapterResult("intro", "executed", 2.5)]
    monkeypatch.setattr(build, "execute_all", lambda *a, **k: done)
    settings = Settings(results_root=tmp_path / "r")
    expected = {"intro": 1.75, "run pages": 12.5}
    report = build.build_book("smoke", settings, root=tmp_path, only=["intro"], html=False, expected=expected)
    saved = json.loads((tmp_path / "r" / "book" / "smoke" / "build.json").read_text(encoding="utf-8"))
    assert report.estimated == saved["estimated"] == expected
    assert saved["chapters"] == [{**saved["chapters"][0], "slug": "intro", "seconds": 2.5}]
    build.build_book("smoke", settings, root=tmp_path, only=["intro"], html=False)
    assert json.loads((tmp_path / "r" / "book" / "smoke" / "build.json").read_text(encoding="utf-8"))["estimated"] == {}
