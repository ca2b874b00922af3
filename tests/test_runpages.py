"""Run pages and span errors (:mod:`medibio.book.runpages`, :mod:`medibio.book.spans`) on hand-made records.

Error kinds are checked on spans worked out by hand and against the NER metric (the kinds' counts must give
the F1 that seqeval gives); pages are written from records and predictions written here, without training,
and read back: where they are, the downloads and their SHA-256, the examples the page's script lists, the
paired view, the index and the links a table gets.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import random
import re
from pathlib import Path

import pandas as pd
import pytest

from medibio.book import notebook, runpages, spans
from medibio.book.notebook import ChapterContext
from medibio.core.hashing import file_sha256
from medibio.core.settings import Settings
from medibio.runs import records
from medibio.runs.identity import RunKey
from medibio.tasks import metrics, scierc_metrics

MODEL = {"name": "minilm", "path": "/m", "tag": "minilm", "hash": "sha256:0", "model_type": "bert", "parameters": 1}


def _examples(html: Path) -> dict:
    text = html.read_text(encoding="utf-8")
    found = re.search(r'<script type="application/json" id="examples">(.*?)</script>', text, re.S)
    assert found, "the page embeds no examples"
    examples = json.loads(found.group(1).replace("<\\/", "</"))
    return with_texts(html, text, examples)


def with_texts(html: Path, text: str, examples: dict) -> dict:
    """The examples with each row's text, as the page's script reads them: from the dataset's texts script."""
    shared = re.search(r'<script src="([^"]*/texts/[^"]+)"></script>', text)
    if shared:
        script = (html.parent / shared.group(1)).read_text(encoding="utf-8")
        texts = json.loads(script.removeprefix("window.medibioTexts = ").rstrip().removesuffix(";"))
        for row in examples["rows"]:
            row.setdefault("t", texts[row["i"]])
    return examples


# --------------------------------------------------------------------------- error kinds


def test_each_error_kind_on_spans_worked_out_by_hand() -> None:
    gold = [(0, 1, "A"), (3, 3, "A"), (5, 6, "A"), (8, 8, "A")]
    predicted = [(0, 1, "A"), (3, 3, "B"), (5, 5, "A"), (10, 10, "A")]
    found = {(s.side, s.start, s.end): s.kind for s in spans.classify(gold, predicted)}
    assert found == {("predicted", 0, 1): "correct", ("predicted", 3, 3): "wrong type",
                     ("predicted", 5, 5): "wrong boundary", ("predicted", 10, 10): "spurious",
                     ("gold", 0, 1): "correct", ("gold", 3, 3): "wrong type", ("gold", 5, 6): "wrong boundary",
                     ("gold", 8, 8): "missed"}
    assert spans.counts(spans.classify(gold, predicted)) == {
        "correct": 1, "wrong type": 1, "wrong boundary": 1, "spurious": 1, "missed": 1}


def test_bio_spans_read_tags_as_the_ner_metric_does() -> None:
    # conlleval mode: an I after O opens an entity
    assert spans.bio_spans(["B", "I", "O", "I", "I", "O", "B", "B"]) == [
        (0, 1, "ENT"), (3, 4, "ENT"), (6, 6, "ENT"), (7, 7, "ENT")]


def test_the_spans_of_all_sentences_at_once_are_seqevals() -> None:
    """The run pages find every sentence's spans at once, without importing seqeval: the same spans as seqeval's
    sentence by sentence, on untyped and typed tags alike, and seqeval's own reading where a tag is odd."""
    rng = random.Random(5)
    for alphabet in (["B", "I", "O", "O"], ["B-X", "I-X", "B-Y", "I-Y", "O", "O"]):
        tag_lists = [[rng.choice(alphabet) for _ in range(rng.randint(0, 12))] for _ in range(300)]
        assert spans.sentence_spans(tag_lists) == [spans.bio_spans(tags) for tags in tag_lists]
    odd = [["B", "I"], ["E-X", "O"]]
    assert spans.sentence_spans(odd) == [spans.bio_spans(tags) for tags in odd]


def test_error_counts_give_the_f1_of_the_ner_metric() -> None:
    rng = random.Random(3)
    gold_tags, pred_tags = [], []
    for _ in range(200):
        n = rng.randint(1, 15)
        gold_tags.append([rng.choice("BIOOO") for _ in range(n)])
        pred_tags.append([rng.choice("BIOOO") for _ in range(n)])
    total = spans.counts([])
    gold_n = 0
    for g, p in zip(gold_tags, pred_tags, strict=True):
        gold_n += len(spans.bio_spans(g))
        total.update(spans.counts(spans.classify(spans.bio_spans(g), spans.bio_spans(p))))
    predicted = sum(total[k] for k in ("correct", "wrong type", "wrong boundary", "spurious"))
    scored = metrics.ner_entity_f1(gold_tags, pred_tags)
    assert predicted == scored["pred_entities"] and gold_n == scored["gold_entities"]
    f1 = 200 * total["correct"] / (predicted + gold_n)
    assert f1 == pytest.approx(scored["score"])
    assert total["missed"] + total["wrong type"] + total["wrong boundary"] <= gold_n - total["correct"]


def test_relation_kinds_agree_with_the_relation_metric() -> None:
    gold = [(0, 0, 2, 3, "USED-FOR"), (5, 5, 7, 7, "PART-OF"), (9, 10, 12, 12, "COMPARE"), (14, 14, 16, 16, "USED-FOR")]
    predicted = [(0, 0, 2, 3, "USED-FOR"), (5, 5, 7, 7, "COMPARE"), (9, 9, 12, 12, "COMPARE"), (20, 20, 22, 22, "PART-OF")]
    kinds = {(e.side, e.relation): e.kind for e in spans.classify_relations(gold, predicted)}
    assert kinds[("predicted", predicted[0])] == "correct"
    assert kinds[("predicted", predicted[1])] == "wrong type"
    assert kinds[("predicted", predicted[2])] == "wrong boundary"
    assert kinds[("predicted", predicted[3])] == "spurious"
    assert kinds[("gold", gold[3])] == "missed"
    counted = spans.relation_counts(spans.classify_relations(gold, predicted))
    scored = scierc_metrics.relation_scores([gold], [[]], [predicted], [[]])
    assert counted["correct"] == scored["correct"]
    assert sum(counted[k] for k in ("correct", "wrong type", "wrong boundary", "spurious")) == scored["predicted"]


def test_coreference_errors_name_mentions_and_links() -> None:
    gold = [[[0, 0], [4, 4], [8, 9]], [[12, 12], [15, 15]]]
    predicted = [[[0, 0], [4, 4]], [[8, 9], [12, 12]], [[20, 20], [22, 22]]]
    found = spans.coreference_errors(gold, predicted)
    assert found["missed mention"] == [(15, 15)]
    assert found["spurious mention"] == [(20, 20), (22, 22)]
    assert found["missed link"] == [((0, 0), (8, 9)), ((4, 4), (8, 9)), ((12, 12), (15, 15))]
    assert found["spurious link"] == [((8, 9), (12, 12)), ((20, 20), (22, 22))]


# --------------------------------------------------------------------------- pages


def test_the_url_names_the_configuration_of_a_record() -> None:
    record = records.RunRecord(dataset="GAD", model=MODEL, profile="cpu", seed=3, config_digest="abcdef012345")
    assert runpages.run_page_url(record) == "runs/finetune/cpu/minilm/base/GAD/abcdef012345/index.html"
    other = records.RunRecord(dataset="GAD", model=MODEL, profile="cpu", seed=1, variant="ift-STS-B",
                              config_digest="0123456789ab")
    assert runpages.paired_page_url(other, record) == (
        "runs/paired/cpu/minilm/GAD/ift-STS-B-0123456789ab-vs-base-abcdef012345/index.html")
    assert notebook.label_text(("minilm", "GAD")) == "minilm / GAD" and notebook.label_text("GAD") == "GAD"


@pytest.fixture()
def bioasq_pages(hand_runs, tmp_path):
    base = [hand_runs.write("base", seed, wrong=range(0, 10)) for seed in (1, 2)]
    ift = [hand_runs.write("ift-STS-B", 1, wrong=range(5, 8), digest="1f11f11f11f1")]
    html = tmp_path / "html"
    written = runpages.write_run_pages(hand_runs.results, "cpu", html, data_root=hand_runs.data)
    return hand_runs, base, ift, html, written


def test_a_page_per_configuration_with_the_downloads_and_their_sha256(bioasq_pages) -> None:
    runs, base, ift, html, written = bioasq_pages
    page = html / runpages.run_page_url(base[0])
    assert page in written and (html / runpages.run_page_url(ift[0])) in written
    assert runpages.run_page_url(base[0]) == runpages.run_page_url(base[1])  # one page for both seeds
    text = page.read_text(encoding="utf-8")
    for record in base:
        for source in (record.path(runs.results), record.predictions_file(runs.results)):
            copy = page.parent / source.name
            assert copy.read_bytes() == source.read_bytes()
            assert f'href="{source.name}"' in text and file_sha256(source) in text
    assert "5eed5eed5eed" in text and "c0ffee" in text  # digest and commit
    assert (html / "runs" / "runpages.js").is_file() and "../" * 7 + "runs/runpages.js" in text


def test_gzipped_predictions_are_offered_uncompressed_as_their_record_names_them(hand_runs, tmp_path) -> None:
    record = hand_runs.write("base", 1, wrong=range(0, 10))
    records.add_digests(record, record.path(hand_runs.results).parent)
    records.write_record(record, hand_runs.results)
    plain = record.path(hand_runs.results).with_name(record.predictions)
    packed = plain.with_name(plain.name + ".gz")  # as reference/ keeps them
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    content = plain.read_bytes()
    plain.unlink()
    html = tmp_path / "html"
    runpages.write_run_pages(hand_runs.results, "cpu", html, data_root=hand_runs.data)
    page = html / runpages.run_page_url(record)
    copy = page.parent / "seed1.test.jsonl"
    assert copy.read_bytes() == content and not (page.parent / packed.name).exists()
    assert record.digests["seed1.test.jsonl"] in page.read_text(encoding="utf-8")  # the download's SHA-256
    rows = _examples(page)["rows"]  # the examples are read from the gzipped file
    assert len(rows) == 40 and {row["id"] for row in rows if not row["ok"]["1"]} == {f"q{i}" for i in range(10)}


def test_the_page_lists_every_test_example_with_its_gold_and_whether_it_is_right(bioasq_pages) -> None:
    runs, base, _, html, _ = bioasq_pages
    data = _examples(html / runpages.run_page_url(base[0]))
    assert data["mode"] == "label" and data["seeds"] == ["1", "2"]
    assert [row["id"] for row in data["rows"]] == [f"q{i}" for i in range(40)]
    wrong = {row["id"] for row in data["rows"] if not row["ok"]["1"]}
    assert wrong == {f"q{i}" for i in range(10)}
    assert data["rows"][0]["g"] == "yes" and data["rows"][0]["p"]["1"] == "no"


def test_the_paired_view_lists_the_examples_where_one_system_is_right(bioasq_pages) -> None:
    _, base, ift, html, _ = bioasq_pages
    page = html / runpages.paired_page_url(ift[0], base[0])
    text = page.read_text(encoding="utf-8")
    # ift wrong on q5-q7, direct wrong on q0-q9 (both seeds): ift alone right on q0-q4 and q8-q9
    rows = re.findall(r'<tr class="(a-right|b-right)"><td><code>(q\d+)</code>', text)
    assert sorted(q for _, q in rows) == sorted(f"q{i}" for i in (0, 1, 2, 3, 4, 8, 9))
    assert {c for c, _ in rows} == {"a-right"}
    assert re.search(r"<th>both wrong</th><td>3</td>", text) and re.search(r"<th>both right</th><td>30</td>", text)
    assert "Paired bootstrap" in text
    run_page = (html / runpages.run_page_url(ift[0])).read_text(encoding="utf-8")
    assert 'id="paired-link"' in run_page


def test_the_index_lists_every_run(bioasq_pages) -> None:
    _, base, ift, html, _ = bioasq_pages
    index = (html / "runs" / "index.html").read_text(encoding="utf-8")
    for record in (base[0], ift[0]):
        assert runpages.run_page_url(record).removeprefix("runs/") in index


def test_pages_are_rebuilt_from_scratch(bioasq_pages) -> None:
    runs, _, _, html, _ = bioasq_pages
    stale = html / "runs" / "finetune" / "cpu" / "minilm" / "gone" / "index.html"
    stale.parent.mkdir(parents=True)
    stale.write_text("old")
    runpages.write_run_pages(runs.results, "cpu", html, data_root=runs.data)
    assert not stale.exists()


def test_without_gold_the_page_says_why_and_keeps_the_rest(hand_runs, tmp_path) -> None:
    record = hand_runs.write("base", 1)
    html = tmp_path / "html"
    runpages.write_run_pages(hand_runs.results, "cpu", html, data_root=tmp_path / "no-data")
    text = (html / runpages.run_page_url(record)).read_text(encoding="utf-8")
    assert "The predictions cannot be listed here" in text
    assert file_sha256(record.predictions_file(hand_runs.results)) in text


def test_a_cross_validated_run_lists_its_fold_from_the_pooled_splits(hand_runs, tmp_path) -> None:
    """A fold's test examples come from the train, dev and test splits pooled (as the claims score them), so
    its page lists them with their gold; a page that cannot list them names no folder of the build machine."""
    folder = hand_runs.data / "blurb" / "BioASQ"
    folder.joinpath("train.tsv").write_text("t0\tIs it?\tSome context.\tyes\nt1\tIs it?\tSome context.\tno\n")
    folder.joinpath("dev.tsv").write_text("d0\tIs it?\tSome context.\tno\n")
    fold = {"cv_fold": 1, "cv_folds": 5}
    record, ift = (dataclasses.replace(hand_runs.write(variant, 1, answers=answers, ids=["t0", "t1", "d0", "q3"],
                                                       digest=digest), details=fold)
                   for variant, answers, digest in (("cv1", ["yes", "yes", "no", "no"], "1c1c1c1c1c1c"),
                                                    ("ift-STS-B+cv1", ["yes", "no", "no", "no"], "2d2d2d2d2d2d")))
    for made in (record, ift):
        records.write_record(made, hand_runs.results)
    html = tmp_path / "html"
    runpages.write_run_pages(hand_runs.results, "cpu", html, data_root=hand_runs.data)
    page = html / runpages.run_page_url(record)
    listed = {row["id"]: (row["g"], row["ok"]["1"]) for row in _examples(page)["rows"]}
    assert listed == {"t0": ("yes", True), "t1": ("no", False), "d0": ("no", True), "q3": ("no", True)}
    assert "cannot be listed" not in page.read_text(encoding="utf-8")
    # its lead says what the score is: one fold's examples, not the official test split's
    assert "Score on cross-validation fold 1 (its own examples of the pooled splits, not the official test split)" \
        in page.read_text(encoding="utf-8") and "Test score <strong>" not in page.read_text(encoding="utf-8")
    # the paired view of the fold with intermediate fine-tuning: the one example they differ on, and no test on
    # one fold's examples (the claims pool the folds)
    paired = (html / runpages.paired_page_url(ift, record)).read_text(encoding="utf-8")
    assert "Where one is right and the other wrong (1)" in paired and "<code>t1</code>" in paired
    assert "One fold of a cross-validation" in paired and "Paired bootstrap" not in paired
    other = tmp_path / "other-data" / "blurb" / "BioASQ"  # a data root without the dev split: said, shortened
    other.mkdir(parents=True)
    for split in ("train", "test"):
        other.joinpath(f"{split}.tsv").write_bytes(folder.joinpath(f"{split}.tsv").read_bytes())
    runpages.write_run_pages(hand_runs.results, "cpu", html, data_root=tmp_path / "other-data")
    problem = re.search(r'<p class="problem">(.*?)</p>', page.read_text(encoding="utf-8"), re.S)
    assert problem and "cv1" in problem.group(1) and str(tmp_path) not in problem.group(1)
    assert "…/BioASQ/dev.tsv" in problem.group(1)


def test_a_records_machine_folders_are_shortened_on_its_page() -> None:
    """The folders of the machine that made a record (its notes, its configuration) read from the run's kind on,
    or by their last two parts; other slashes are left alone."""
    assert runpages.shown_paths("encoder from intermediate fine-tuning: /work/study-root/results/ift-stage/cpu-ift/"
                                "minilm/STS-B/STS-B/0a1b/seed1") == \
        "encoder from intermediate fine-tuning: ift-stage/cpu-ift/minilm/STS-B/STS-B/0a1b/seed1"
    assert runpages.shown_paths('"tokenizer_dir": "/root/.cache/study/tokenizer-study",') == \
        '"tokenizer_dir": "…/study/tokenizer-study",'
    kept = "lr 2e-5/3 on 1/2 of the data (https://example.org/a/b, ./notes/x.md, /tmp)"
    assert runpages.shown_paths(kept) == kept


def _ner_run(tmp_path: Path) -> tuple[Path, Path, records.RunRecord]:
    data = tmp_path / "data"
    folder = data / "blurb" / "BC5CDR-chem"
    folder.mkdir(parents=True)
    sentences = [("Heparin sodium helps .", "B I O O"), ("Aspirin and caffeine .", "B O B O"),
                 ("Nothing here .", "O O O")]
    folder.joinpath("test.tsv").write_text("\n".join("".join(f"{w}\t{t}\n" for w, t in zip(s.split(), g.split(),
                                                                                            strict=True))
                                                     for s, g in sentences))
    results = tmp_path / "results"
    predicted = [["B", "O", "O", "O"], ["B", "O", "O", "B"], ["O", "O", "O"]]
    key = RunKey("finetune", "cpu", "minilm", "base", "BC5-chem", 1, "aaaabbbbcccc")
    path = key.predictions_path(results)
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps({"id": str(i), "prediction": p}) + "\n" for i, p in enumerate(predicted)))
    record = records.RunRecord(dataset="BC5-chem", model=MODEL, profile="cpu", seed=1, predictions=path.name,
                               score_test=40.0, config_digest="aaaabbbbcccc",
                               dev_curve=[{"epoch": 1, "step": 2, "dev": {"score": 10.0}},
                                          {"epoch": 2, "step": 4, "dev": {"score": 20.0}}])
    records.write_record(record, results)
    return data, results, record


def test_an_ner_page_shows_spans_by_error_kind_and_counts_them(tmp_path) -> None:
    data, results, record = _ner_run(tmp_path)
    html = tmp_path / "html"
    runpages.write_run_pages(results, "cpu", html, data_root=data)
    page = html / runpages.run_page_url(record)
    examples = _examples(page)
    assert examples["mode"] == "ner"
    first, second, third = examples["rows"]
    assert first["t"] == ["Heparin", "sodium", "helps", "."]
    assert [s[3:] for s in first["s"]["1"]] == [["predicted", "wrong boundary"], ["gold", "wrong boundary"]]
    assert sorted(s[4] for s in second["s"]["1"] if s[3] == "predicted") == ["correct", "spurious"]
    assert [s[4] for s in second["s"]["1"] if s[3] == "gold"] == ["correct", "missed"]
    assert (first["ok"]["1"], second["ok"]["1"], third["ok"]["1"]) == (False, False, True)
    text = page.read_text(encoding="utf-8")
    section = text[text.index('id="errors"'):text.index('id="predictions"')]
    assert dict(re.findall(r"<th>([a-z ]+)</th>\s*<td>(\d+)</td>", section)) == {
        "correct": "1", "wrong type": "0", "wrong boundary": "1", "spurious": "1", "missed": "1"}
    curve = text[text.index("<svg"):text.index("</svg>")]  # the dev curve, its text kept as text
    labels = re.findall(r"<text[^>]*>([^<]*)</text>", curve)
    assert labels[:labels.index("epoch")] == ["1", "2"]  # whole epochs only, no 1.2 between them


def test_scierc_documents_carry_entities_relations_and_clusters(tmp_path, fixtures_dir) -> None:
    data = tmp_path / "data"
    (data / "scierc").mkdir(parents=True)
    (data / "scierc" / "test.json").write_text((fixtures_dir / "scierc" / "tiny.json").read_text())
    results = tmp_path / "results"
    key = RunKey("scierc", "cpu", "minilm", "joint", "SciERC", 1, "5c1e5c1e5c1e")
    path = key.predictions_path(results)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"doc_key": "D1", "entities": [[0, 0, "Generic"], [2, 3, "Task"], [7, 7, "Metric"]],
                                "relations": [[0, 0, 2, 3, "USED-FOR"]], "clusters": [[[2, 3], [7, 7]]]}) + "\n")
    record = records.RunRecord(dataset="SciERC", model=MODEL, profile="cpu", seed=1, kind="scierc",
                               variant="joint", predictions=path.name, config_digest="5c1e5c1e5c1e")
    found = runpages.scierc_examples([record], results, data)
    assert [row["id"] for row in found.rows] == ["D1"]  # only the predicted document
    row = found.rows[0]
    assert {tuple(s[:3]): s[4] for s in row["s"]["1"] if s[3] == "predicted"} == {
        (0, 0, "Generic"): "correct", (2, 3, "Task"): "wrong type", (7, 7, "Metric"): "correct"}
    assert [r[5:] for r in row["r"]["1"] if r[5] == "predicted"] == [["predicted", "correct"]]
    assert found.counts[1]["relation missed"] == 1 and found.counts[1]["entity missed"] == 1
    assert found.counts[1]["coreference missed mention"] == 1  # (5, 5) is in no predicted cluster


# --------------------------------------------------------------------------- links from tables


def test_table_links_reach_the_run_and_frozen_pages(hand_runs, tmp_path) -> None:
    base = hand_runs.write("base", 1)
    frozen = records.RunRecord(dataset="BioASQ", model=MODEL, profile="cpu", seed=0, kind="frozen",
                               variant="probe", config_digest="f0f0f0f0f0f0", score_test=50.0)
    records.write_record(frozen, hand_runs.results)
    links = runpages.table_links([base], ["mean"], results_root=hand_runs.results)
    assert links == {("BioASQ", "mean"): runpages.run_page_url(base),
                     ("BioASQ", "frozen encoder"): runpages.run_page_url(frozen),
                     ("BioASQ", "frozen 95% CI"): runpages.run_page_url(frozen)}
    by_model = runpages.table_links([base], ["mean"], index=["model_tag", "dataset"])
    assert by_model == {("minilm / BioASQ", "mean"): runpages.run_page_url(base)}


def test_a_chapter_table_renders_linked_cells_as_anchors(tmp_path) -> None:
    chapter = ChapterContext("t", "cpu", Settings(results_root=tmp_path))
    frame = pd.DataFrame({"mean": [70.123, 60.0], "n": [1, 3]}, index=pd.Index(["GAD", "HoC"], name="dataset"))
    html = chapter.table("t", frame, links={("GAD", "mean"): "runs/a/index.html"}).to_html()
    assert '<a href="../runs/a/index.html">70.12</a>' in html
    assert html.count("<a href") == 1


def test_a_capped_test_set_lists_the_examples_its_predictions_cover(hand_runs, tmp_path) -> None:
    record = hand_runs.write("base", 1, answers=["yes", "yes", "no"], ids=["q0", "q1", "q3"])
    found = runpages.blurb_examples([record], hand_runs.results, hand_runs.data)
    assert [(row["id"], row["ok"]["1"]) for row in found.rows] == [("q0", True), ("q1", False), ("q3", True)]


def test_a_profiles_pretraining_run_gets_its_page(tmp_path: Path) -> None:
    """Pretraining records are filed under the profile's pretraining configuration (``mini`` for ``cpu``)."""
    run = records.RunRecord(dataset="biomed-abstracts", model=MODEL, profile="mini", seed=1, kind="pretrain",
                            variant="scratch", config_digest="abcdef012345")
    records.write_record(run, tmp_path)
    found = runpages.configurations(tmp_path, "cpu")
    assert [c.first.kind for c in found] == ["pretrain"] and found[0].url.startswith("runs/pretrain/mini/")
    assert runpages.configurations(tmp_path, "gpu") == []


def test_the_recorded_runs_a_verdict_reads_get_pages_that_open_with_score_baselines_and_the_paper(hand_runs, tmp_path) -> None:
    from medibio.paper import tables

    base = hand_runs.write("base", 1, wrong=range(0, 10))
    study = hand_runs.write("study-3", 1, wrong=range(0, 4), profile="cpu-study", digest="3a3a3a3a3a3a")
    ift = hand_runs.write("ift-BioASQ", 1, wrong=range(0, 2), profile="cpu-ift", digest="1f1f1f1f1f1f")
    html = tmp_path / "html"
    written = runpages.write_run_pages(hand_runs.results, "cpu", html, data_root=hand_runs.data)
    for record in (base, study, ift):
        assert html / runpages.run_page_url(record) in written
    text = (html / runpages.run_page_url(study)).read_text(encoding="utf-8")
    lead = text[text.index('<p class="lead score">'):text.index("</p>", text.index('<p class="lead score">'))]
    assert "Test score <strong>90.00</strong>" in lead and "Baselines on the same test set, and the paper" in text
    assert f"Table 6, #3 {tables.column_scores(6, '#3')['BioASQ']:.2f}" in lead  # the arm's column of Table 6
    assert text.index("Test score") < text.index("Hyperparameters and caps")
    base_text = (html / runpages.run_page_url(base)).read_text(encoding="utf-8")
    assert "Table 7, MediBioDeBERTa-IFT" in base_text and "Table 6, #1" in base_text
    index = (html / "runs" / "index.html").read_text(encoding="utf-8")
    assert runpages.run_page_url(ift).removeprefix("runs/") in index


def test_a_long_prediction_list_goes_beside_the_page(hand_runs, tmp_path, monkeypatch) -> None:
    record = hand_runs.write("base", 1, wrong=range(0, 10))
    monkeypatch.setattr(runpages, "INLINE_EXAMPLES", 100)
    html = tmp_path / "html"
    runpages.write_run_pages(hand_runs.results, "cpu", html, data_root=hand_runs.data)
    page = html / runpages.run_page_url(record)
    text = page.read_text(encoding="utf-8")
    assert '<script src="examples.js"></script>' in text and 'id="examples"' not in text
    script = (page.parent / "examples.js").read_text(encoding="utf-8")
    assert script.startswith("window.medibioExamples = ")
    data = json.loads(script.removeprefix("window.medibioExamples = ").rstrip().rstrip(";").replace("<\\/", "</"))
    assert len(data["rows"]) == 40


def test_a_cross_validation_folds_ift_run_is_paired_with_the_same_folds_direct_run(hand_runs, tmp_path) -> None:
    base = hand_runs.write("base", 1, wrong=range(0, 10))
    fold = hand_runs.write("cv2", 1, wrong=range(0, 6), digest="2c2c2c2c2c2c")
    ift_fold = hand_runs.write("ift-STS-B+cv2", 1, wrong=range(0, 4), digest="3d3d3d3d3d3d")
    html = tmp_path / "html"
    runpages.write_run_pages(hand_runs.results, "cpu", html, data_root=hand_runs.data)
    paired = html / runpages.paired_page_url(ift_fold, fold)
    assert paired.is_file() and not (html / runpages.paired_page_url(ift_fold, base)).exists()
    link = re.search(r'id="paired-link" href="([^"]+)"', (html / runpages.run_page_url(ift_fold)).read_text(encoding="utf-8"))
    assert link and (html / runpages.run_page_url(ift_fold)).parent.joinpath(link.group(1)).resolve() == paired.resolve()


def test_no_run_page_links_to_a_paired_view_that_could_not_be_written(hand_runs, tmp_path) -> None:
    hand_runs.write("base", 1, wrong=range(0, 10))
    ift = hand_runs.write("ift-STS-B", 1, wrong=range(5, 8), digest="1f11f11f11f1")
    (hand_runs.data / "blurb" / "BioASQ" / "test.tsv").unlink()  # no gold: neither page lists its examples
    html = tmp_path / "html"
    runpages.write_run_pages(hand_runs.results, "cpu", html, data_root=hand_runs.data)
    assert 'id="paired-link"' not in (html / runpages.run_page_url(ift)).read_text(encoding="utf-8")
    assert not (html / "runs" / "paired").exists()


def test_the_pages_of_a_dataset_read_its_texts_from_one_script(hand_runs, tmp_path) -> None:
    base = hand_runs.write("base", 1, wrong=range(0, 10))
    ift = hand_runs.write("ift-BIOSSES", 1, wrong=range(0, 4), intermediate=["BIOSSES"])
    html = tmp_path / "html"
    runpages.write_run_pages(hand_runs.results, "cpu", html, data_root=hand_runs.data)
    pages = [(html / runpages.run_page_url(r)) for r in (base, ift)]
    scripts = {re.search(r'<script src="([^"]*/texts/[^"]+)"></script>', p.read_text(encoding="utf-8")).group(1)
               for p in pages}
    assert {(pages[0].parent / s).resolve() for s in scripts} == {html / "runs" / "texts" / "BioASQ-test.js"}
    rows = [_examples(p)["rows"] for p in pages]
    assert [row["t"] for row in rows[0]] == [row["t"] for row in rows[1]] == [["Is it?", "Some context."]] * 40
    assert "Some context" not in pages[0].read_text(encoding="utf-8")  # the page holds positions, not texts
