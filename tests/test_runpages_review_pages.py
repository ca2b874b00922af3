"""What a run page shows and how the chapters reach it (:mod:`medibio.book.runpages`, :mod:`medibio.book.study`):
digests out of the score table, flags in words, counts in one format, the metric named, the baselines of a run
filed under another profile, the paper's number of the run's own arm, and the study's and IFT claims' tables
linking every configuration to its page. Pages are written from hand-made records and read back; the study's
functions read the recorded runs in ``reference/``.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from medibio.book import runpages, study
from medibio.results.recorded import REFERENCE_ROOT
from medibio.runs import records
from medibio.runs.records import load_records

HEX64 = re.compile(r"\b[0-9a-f]{64}\b")


class _Table(HTMLParser):
    """The cells of the table with a given id, as text (enough to check what a reader sees in it)."""

    def __init__(self, table_id: str) -> None:
        super().__init__()
        self.table_id, self.inside, self.depth, self.cells, self.cell = table_id, False, 0, [], None

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag == "table" and dict(attrs).get("id") == self.table_id:
            self.inside = True
        elif tag == "table" and self.inside:
            self.depth += 1
        if self.inside and tag in ("td", "th"):
            self.cell = []

    def handle_endtag(self, tag: str) -> None:
        if self.inside and tag in ("td", "th") and self.cell is not None:
            self.cells.append("".join(self.cell).strip())
            self.cell = None
        if tag == "table" and self.inside:
            self.depth -= 1
            self.inside = self.depth >= 0
            self.depth = max(self.depth, 0)

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)


def table_cells(text: str, table_id: str) -> list[str]:
    parser = _Table(table_id)
    parser.feed(text)
    return parser.cells


@pytest.fixture()
def page(hand_runs, tmp_path) -> tuple[Path, records.RunRecord]:
    record = hand_runs.write("base", 1, wrong=range(0, 10))
    record.hyperparameters = {"context": True, "reuse_frozen_layers": False, "mode": "joint", "cap": None,
                              "learning_rate": 0.0001}
    record.train_examples = 4261
    record.eval_examples = 40
    records.write_record(record, hand_runs.results)
    html = tmp_path / "html"
    runpages.write_run_pages(hand_runs.results, "cpu", html, data_root=hand_runs.data)
    return html / runpages.run_page_url(record), record


def test_the_score_table_holds_no_digest_and_the_downloads_keep_theirs(page, hand_runs) -> None:
    path, record = page
    text = path.read_text(encoding="utf-8")
    cells = table_cells(text, "seed-table")
    assert cells and not any(HEX64.search(c) for c in cells), cells
    assert not any("SHA-256" in c for c in cells)
    downloads = text[text.index('<section id="downloads">'):]
    for source in (record.path(hand_runs.results), record.predictions_file(hand_runs.results)):
        assert f'href="{source.name}"' in downloads
        assert (path.parent / source.name).read_bytes() == source.read_bytes()
    assert len(HEX64.findall(downloads)) >= 2  # each file's SHA-256, below the scores


def test_flags_read_as_words_and_counts_carry_separators(page) -> None:
    text = page[0].read_text(encoding="utf-8")
    settings = text[text.index("Hyperparameters and caps"):text.index("</details>", text.index("Hyperparameters"))]
    assert "<code>yes</code>" in settings and "<code>no</code>" in settings and "<code>none</code>" in settings
    assert not re.search(r">(true|false|null)<", settings) and "&#34;joint&#34;" not in settings
    assert "4,261" in table_cells(text, "seed-table") and "4261" not in table_cells(text, "seed-table")
    assert runpages._number(4261) == "4,261" and runpages._number(12.5) == "12.50"


def test_the_lead_names_the_metric(page) -> None:
    lead = re.search(r'<p class="lead score">(.*?)</p>', page[0].read_text(encoding="utf-8"), re.S).group(1)
    assert "(accuracy)" in lead
    scierc = runpages.metric_name("SciERC")
    assert "NER" in scierc and "relation" in scierc and "coreference" in scierc


def test_a_run_of_another_profile_gets_the_frozen_baseline_of_its_encoder(hand_runs, tmp_path) -> None:
    """A cpu-ift run of the same encoder on the same dataset: its page links the frozen probe the cpu profile
    recorded (matched by the model's fingerprint)."""
    ift = hand_runs.write("base", 1, profile="cpu-ift", digest="1f71f71f71f7")
    frozen = records.RunRecord(kind="frozen", dataset="BioASQ", model=hand_runs.MODEL, profile="cpu", seed=1,
                               variant="probe", score_test=61.0, config_digest="f202f202f202",
                               test={"score": 61.0, "ci95_low": 55.0, "ci95_high": 66.0})
    records.write_record(frozen, hand_runs.results)
    html = tmp_path / "html"
    runpages.write_run_pages(hand_runs.results, "cpu", html, data_root=hand_runs.data)
    text = (html / runpages.run_page_url(ift)).read_text(encoding="utf-8")
    baselines = text[text.index('<section id="baselines">'):text.index("</section>", text.index('id="baselines"'))]
    assert runpages.run_page_url(frozen) in baselines and "61.00" in baselines
    assert "frozen encoder 61.00" in re.search(r'<p class="lead score">(.*?)</p>', text, re.S).group(1)


def test_a_constant_answer_has_no_pearson_correlation() -> None:
    record = records.RunRecord(dataset="BIOSSES", model={"name": "m", "tag": "m", "hash": "sha256:1"},
                               profile="cpu-ift", seed=1, score_test=50.0, config_digest="0" * 12)
    shown = runpages._baselines(runpages.Configuration([record]), {}, (2.4, 0.0))
    constant = next(b for b in shown if b["short"] == "constant answer")
    assert constant["score"].startswith("undefined") and "0.00" not in constant["score"]


def test_the_paper_number_is_the_one_of_the_runs_own_arm() -> None:
    def run(tag: str, variant: str) -> records.RunRecord:
        return records.RunRecord(dataset="BIOSSES", model={"name": tag, "tag": tag, "hash": "x"}, profile="cpu-ift",
                                 seed=1, variant=variant, config_digest="0" * 12)

    assert [p["what"] for p in runpages.paper_numbers(run("study-3-s1", "base"))] == ["Table 6, #3"]
    assert runpages.paper_numbers(run("study-3-s2", "ift-STS-B")) == []  # the paper made no IFT run of #3
    assert [p["what"] for p in runpages.paper_numbers(run("minilm", "base"))] == [
        "Table 6, #1", "Table 7, MediBioDeBERTa-IFT"]


def test_the_index_has_a_part_per_profile_for_chapters_to_link(hand_runs, tmp_path) -> None:
    hand_runs.write("base", 1)
    hand_runs.write("base", 1, profile="cpu-ift", digest="1f71f71f71f7")
    html = tmp_path / "html"
    runpages.write_run_pages(hand_runs.results, "cpu", html, data_root=hand_runs.data)
    index = (html / "runs" / "index.html").read_text(encoding="utf-8")
    assert 'id="profile-cpu"' in index and 'id="profile-cpu-ift"' in index
    assert 'href="../runs/index.html#profile-cpu-ift"' in runpages.runs_index_link("x", "cpu-ift")


# --------------------------------------------------------------------------- the chapters' tables, recorded runs


def test_every_cpu_ift_configuration_is_linked_from_the_claims_runs_table() -> None:
    found = load_records(REFERENCE_ROOT, profile="cpu-ift", kind="finetune", legacy=False)
    frame, links = runpages.arms_table(found)
    pages = {runpages.run_page_url(r) for r in found}
    assert set(links.values()) == pages  # one page per configuration, each reached from a cell
    assert ("study-3-s1", "BIOSSES", "ift-STS-B") in frame.index and "fold 5" in frame.columns


def test_a_chapter_links_recorded_runs_only_where_its_build_writes_their_pages(tmp_path: Path) -> None:
    found, linked = runpages.recorded_runs(REFERENCE_ROOT, "cpu", "cpu-ift")  # a build from reference/
    assert found and linked and {r.profile for r in found} == {"cpu-ift"}
    assert runpages.recorded_runs(REFERENCE_ROOT, "smoke", "cpu-ift")[1] is False  # a smoke build writes none
    elsewhere, linked = runpages.recorded_runs(tmp_path, "cpu", "cpu-ift")  # none here: reference/'s, unlinked
    assert not linked and {r.run_id for r in elsewhere} == {r.run_id for r in found}


def test_every_study_model_is_linked_per_set() -> None:
    frame, links = study.per_model_table(REFERENCE_ROOT)
    runs = [r for rs in study.recorded_runs(REFERENCE_ROOT).values() for r in rs]
    assert {runpages.run_page_url(r) for r in runs} == set(links.values())
    assert list(frame.index[:2]) == ["#0, pretraining seed 1", "#0, pretraining seed 2"]
    assert all(url.startswith("runs/finetune/cpu-study/") for url in links.values())


def test_the_loss_curves_run_from_1_to_4_one_line_per_seed_and_no_pilot() -> None:
    curves = study.curves_frame(REFERENCE_ROOT)
    assert list(dict.fromkeys(curves["arm"])) == ["#1", "#2", "#3", "#4", "#cs"]
    lines = curves.drop_duplicates("run")
    assert not lines["run"].str.contains("pilot|made").any()
    assert lines.groupby(["arm", "line"]).size().eq(1).all()
    assert set(lines[lines["arm"] == "#3"]["line"]) == {"seed 1, fp32", "seed 2, fp32"}


def test_a_chapter_links_a_profiles_runs_only_where_the_build_writes_their_pages() -> None:
    """The cpu book writes pages for its own runs and the recorded profiles its claims read; a gpu or smoke build
    whose results root also holds those records (a cpu build from reference/ copied them there) links none."""
    assert runpages.has_pages("cpu", "cpu") and runpages.has_pages("cpu", "cpu-ift") and runpages.has_pages("cpu", "cpu-study")
    assert not runpages.has_pages("gpu", "cpu-ift") and not runpages.has_pages("smoke", "cpu-study")
    assert runpages.has_pages("gpu", "gpu")


def test_a_pretrained_models_tag_splits_back_into_its_run_and_seed() -> None:
    from medibio.models import zoo

    assert zoo.split_pretrained_tag(zoo.pretrained_tag("study-3", 2)) == ("study-3", "2")
    assert zoo.split_pretrained_tag("minilm") is None and zoo.split_pretrained_tag("x-small") is None
