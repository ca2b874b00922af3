"""The book for the reader's own model (issue 36): ``medibio book --model NAME_OR_PATH``.

Fast tests: the ``model`` parameter and what it changes, the presets note, the one-line refusal of a hub id
that cannot be reached offline. The slow test builds the smoke book through the command line for a second
tiny model (a 2-layer BERT, :mod:`tests.support.tiny_bert`) and reads what its pages, run pages and records
say about it.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import nbformat
import pytest

from medibio.book import background, build, chapters, notebook, parameters
from medibio.models import zoo
from medibio.runs.records import load_records
from tests.support import tiny_bert
from tests.support.cli import run_main

# the chapters that fine-tune an encoder, and the two pages that say for which model the book was built
MODEL_CHAPTERS = ("intro", "what_holds_up", "table_4_scierc", "tables_5_6_pretraining_configurations",
                  "tables_1_2_intermediate_finetuning", "table_7_blurb_comparison")


def test_model_parameter_defaults_the_models_the_chapter_trains() -> None:
    assert parameters.resolve("cpu", model=None, models=None).models == ["minilm"]
    chosen = parameters.resolve("cpu", model="/some/folder/my-encoder", models=None)
    assert chosen.model == "/some/folder/my-encoder" and chosen.models == ["/some/folder/my-encoder"]
    # an explicit list still wins
    assert parameters.resolve("cpu", model="tiny-deberta", models="minilm").models == ["minilm"]
    with pytest.raises(parameters.ParameterError, match="parameter model: expected a model name"):
        parameters.resolve("cpu", model=3)


@pytest.mark.parametrize("slug", MODEL_CHAPTERS)
def test_chapters_that_train_declare_model_and_pass_it_on(slug: str) -> None:
    nb = nbformat.read(str(chapters.get(slug).source_path), as_version=4)
    cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    assert "\nmodel = None  #" in "\n" + cell.source
    assert any(f'nb.setup("{slug}", profile, data_root, results_root, model=model' in c.source for c in nb.cells)


def test_pages_say_when_the_presets_were_made_for_another_model(tmp_path) -> None:
    assert notebook.presets_note("cpu", "minilm") == ""
    assert notebook.presets_note("cpu", str(zoo.minilm_path())) == ""  # the same model, by its folder
    note = notebook.presets_note("smoke", str(tmp_path / "my-encoder"))
    assert "`smoke` profile's fine-tuning presets" in note and "`tiny-deberta`" in note and "`my-encoder`" in note
    assert str(tmp_path) not in note  # a page names a folder, never the build machine's path


def test_tables_and_figures_name_the_model(tmp_path, monkeypatch) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    monkeypatch.chdir(tmp_path)
    chapter = notebook.ChapterContext("99_model", "smoke", notebook.Settings(results_root=tmp_path),
                                      model=str(tmp_path / "my-encoder"))
    chapter.table("t", pd.DataFrame({"a": [1.0]}), caption="Scores")
    fig, ax = plt.subplots()
    chapter.figure("f", fig)
    summary = notebook.read_summary(tmp_path, "smoke", "99_model")
    assert summary["model"] == str(tmp_path / "my-encoder")
    assert summary["tables"]["t"]["caption"] == "Scores · built for my-encoder on profile smoke"
    chapter.table("p", pd.DataFrame({"a": [1.0]}), caption="Table 1 (paper)", printed=True)
    assert notebook.read_summary(tmp_path, "smoke", "99_model")["tables"]["p"]["caption"] == "Table 1 (paper)"
    assert [t.get_text() for t in fig.texts] == ["built for my-encoder on profile smoke"]
    plt.close(fig)
    paper, _ = plt.subplots()
    chapter.figure("paper", paper, printed=True)
    assert not paper.texts
    plt.close(paper)
    # numbers other models made (another profile's recorded runs) name them in place of this build's model
    chapter.table("r", pd.DataFrame({"a": [1.0]}), caption="Study", made_by="recorded runs of profile cpu-study")
    assert notebook.read_summary(tmp_path, "smoke", "99_model")["tables"]["r"]["caption"] == \
        "Study · recorded runs of profile cpu-study"
    recorded, _ = plt.subplots()
    chapter.figure("recorded", recorded, made_by="recorded runs of profile cpu-study")
    assert [t.get_text() for t in recorded.texts] == ["recorded runs of profile cpu-study"]
    plt.close(recorded)


def test_background_process_trains_for_the_books_model() -> None:
    cmd = background.command("cpu", ["tables_5_6_pretraining_configurations"], model="tiny-deberta")
    assert cmd[cmd.index("--model") + 1] == "tiny-deberta"
    assert "--model" not in background.command("cpu")


def test_an_unreachable_hub_model_is_one_line_before_any_chapter(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    started = []
    monkeypatch.setattr(build, "build_book", lambda *a, **k: started.append(a))
    code, out, err = run_main(["book", "--profile", "gpu", "--model", "some-org/not-cached-model",
                               "--results-root", str(tmp_path / "results")], capsys)
    assert code == 2 and not started and "▶" not in out
    line = err.strip()
    assert "\n" not in line
    assert "'some-org/not-cached-model'" in line and "profile gpu" in line and "--model" in line


class _Started(Exception):
    """Raised by a stand-in for build_book: the build got as far as its chapters."""


@pytest.mark.parametrize("model, checked", [(None, []), ("minilm", ["minilm"])])
def test_a_build_from_recorded_runs_checks_only_a_model_it_was_given(model, checked, tmp_path, monkeypatch,
                                                                    capsys) -> None:
    """Rendering recorded runs of the profile's model loads no model (nothing trains), so the build does not wait
    on loading its configuration and tokenizer first; a model named with --model is still checked before any
    chapter."""
    seen: list[str] = []
    monkeypatch.setattr(zoo, "check_loadable", lambda name, *a, **k: seen.append(name))

    def started(*args, **kwargs):
        raise _Started

    monkeypatch.setattr(build, "build_book", started)
    recorded = tmp_path / "recorded"
    recorded.mkdir()
    argv = ["book", "--profile", "cpu", "--json", "--from", str(recorded), "--results-root", str(tmp_path / "r"),
            "--data-root", str(tmp_path)]
    with pytest.raises(_Started):
        run_main(argv + (["--model", model] if model else []), capsys)
    assert seen == checked


@pytest.mark.slow
def test_smoke_book_for_a_second_tiny_model_names_it_everywhere(tmp_path, monkeypatch, capsys,
                                                                session_settings) -> None:
    model = tiny_bert.build(tmp_path / "models")
    root = build.book_root(tmp_path / "root")
    results = tmp_path / "results"
    monkeypatch.setattr(build, "build_book", functools.partial(build.build_book, root=root))
    monkeypatch.setenv("MEDIBIO_CACHE", str(session_settings.cache_root))
    code, out, err = run_main(["book", "--profile", "smoke", "--model", str(model), "--keep-going",
                               "--results-root", str(results)] +
                              (["--data-root", str(session_settings.data_root)]
                               if session_settings.data_root.is_dir() else []), capsys)
    report = json.loads((results / "book" / "smoke" / "build.json").read_text(encoding="utf-8"))
    failed = [c for c in report["chapters"] if c["status"] == "failed"]
    assert code == 0 and not failed, (failed, err[-3000:])
    assert f"model {model}" in out.splitlines()[0]
    html = Path(report["html_dir"])
    for slug in MODEL_CHAPTERS:
        page = (html / "book" / f"{slug}.html").read_text(encoding="utf-8")
        assert f"for model <code>{tiny_bert.NAME}</code>" in page, slug  # the provenance line under its first result
        assert "Presets made for another model" in page, slug
        summary = notebook.read_summary(results, "smoke", slug)
        assert summary["model"] == str(model)
        captions = [t["caption"] for t in summary["tables"].values() if t["caption"]]
        printed = [c for c in captions if "(paper)" in c or "printed in the paper" in c]  # no model made them
        # numbers another profile's models made (recorded runs) name those runs, not this build's model
        made = [c for c in captions if c not in printed and "recorded runs of" not in c]
        assert all("built for tiny-bert-test on profile smoke" in c for c in made), slug
        assert not [c for c in captions if "recorded runs of" in c and "built for" in c], slug
        assert not [c for c in printed if "built for" in c], slug
    # the records carry the model's fingerprint; the run pages name it
    records = [r for r in load_records(results, profile="smoke") if r.kind in ("finetune", "frozen", "scierc")]
    assert records and {r.model_tag for r in records} == {tiny_bert.NAME}
    assert {r.model["hash"] for r in records} == {zoo.fingerprint(model)}
    run_pages = list((html / "runs").rglob("index.html"))
    assert run_pages and all(f"/{tiny_bert.NAME}/" in str(p) for p in run_pages
                             if "/finetune/" in str(p) or "/scierc/" in str(p))
    assert any(tiny_bert.NAME in p.read_text(encoding="utf-8") for p in run_pages)
    # the claims page judges the IFT claim on this model's runs and says so
    assert f"smoke/{tiny_bert.NAME}" in (html / "book" / "what_holds_up.html").read_text(encoding="utf-8")
