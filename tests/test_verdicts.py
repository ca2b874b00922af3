"""The claims chapter's verdicts: the two rules, the paper's evidence from its printed numbers, our evidence
from run records written in tmp_path (a changed record changes the verdict), the field margin by hand, the
links to the chapters' headings, and ``medibio claims --json``."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import nbformat
import numpy as np
import pytest
from docutils.nodes import make_id
from scipy import stats
from typer.testing import CliRunner

from medibio.book import chapters, claims, evidence, rules, verdicts
from medibio.cli.main import app
from medibio.core.settings import Settings
from medibio.fields import bootstrap
from medibio.paper import tables
from medibio.results import significance as S
from medibio.runs import records
from medibio.runs.identity import RunKey

MODEL = {"name": "minilm", "path": "/m", "tag": "minilm", "hash": "sha256:0", "model_type": "bert", "parameters": 1}
# the CPU study's two #3 models, on which ift-biosses is declared
STUDY3 = [{**MODEL, "name": f"pretrain-run:study/scratch/study-3/biomed-abstracts/d1{s}/seed{s}", "tag": tag,
           "hash": f"sha256:3{s}"} for s, tag in enumerate(claims.get("ift-biosses").test.models, start=1)]
# ift-biosses as it was declared on MiniLM's runs (the ceiling case): the claims' rules on one model's runs
MINILM_BIOSSES = dataclasses.replace(claims.get("ift-biosses"), test=dataclasses.replace(
    claims.get("ift-biosses").test, models=(), also=(), ceiling="MiniLM was trained for similarity"))
GOLD = [round(4 * ((7 * i) % 20) / 19, 3) for i in range(20)]  # 20 BIOSSES test pairs, scores spread over 0-4


class Build:
    """A data root holding a 20-pair BIOSSES test split, and a results root whose BIOSSES run records are
    written by hand: predictions are the gold scores plus noise of a chosen size (more noise, lower Pearson)."""

    def __init__(self, base: Path) -> None:
        self.data = base / "data"
        self.results = base / "results"
        folder = self.data / "blurb" / "BIOSSES"
        folder.mkdir(parents=True)
        folder.joinpath("test.tsv").write_text(
            "pair_id\tsent1\tsent2\tscore\n" + "".join(f"p{i}\tA b.\tC d.\t{g}\n" for i, g in enumerate(GOLD)))
        self.settings = Settings(data_root=self.data, results_root=self.results, cache_root=base / "cache")

    def write(self, variant: str, seed: int, noise: float, score_dev: float = 50.0, dataset: str = "BIOSSES",
              model: dict | None = None, profile: str = "cpu", sign: float = 1.0) -> Path:
        values = sign * np.array(GOLD) + noise * np.random.default_rng(seed).standard_normal(len(GOLD))
        model = model or MODEL
        digest = "5eed5eed5eed"
        path = RunKey("finetune", profile, model["tag"], variant, dataset, seed, digest).predictions_path(self.results)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps({"id": f"p{i}", "prediction": float(v)}) + "\n"
                                for i, v in enumerate(values)))
        score = 100 * float(np.corrcoef(values, GOLD)[0, 1])
        record = records.RunRecord(dataset=dataset, model=model, profile=profile, seed=seed, variant=variant,
                                   predictions=path.name, score_test=score, score_dev=score_dev,
                                   config_digest=digest, environment={"git_commit": "c0ffee", "device": "cpu"})
        records.write_record(record, self.results)
        return path


@pytest.fixture()
def build(tmp_path: Path) -> Build:
    """cpu-ift runs for the declared comparisons (3 seeds each), cpu runs for the dev-selected rows."""
    made = Build(tmp_path)
    for seed in (1, 2, 3):
        made.write("base", seed, noise=2.0, profile="cpu-ift")
        made.write("ift-STS-B", seed, noise=0.05, profile="cpu-ift")
        made.write("ift-BioASQ", seed, noise=2.0, profile="cpu-ift")
    for seed in (1, 2):
        made.write("base", seed, noise=2.0)
        made.write("ift-SICK-R", seed, noise=1.0, score_dev=80.0)  # the best dev score: the one picked
        made.write("ift-STS-B", seed, noise=0.05, score_dev=70.0)
    made.write("ift-BioASQ", 1, noise=2.0, score_dev=60.0)
    for model in STUDY3:
        for seed in (1, 2, 3):
            made.write("base", seed, noise=2.0, profile="cpu-ift", model=model)
            made.write("ift-STS-B", seed, noise=0.05, profile="cpu-ift", model=model)
    return made


# --------------------------------------------------------------------------- the rules


@pytest.mark.parametrize(("low", "high", "side", "expected"), [
    (0.5, 2.0, 1, rules.SUPPORTED), (-2.0, -0.5, 1, rules.CONTRADICTED), (-1.0, 1.0, 1, rules.INCONCLUSIVE),
    (0.0, 2.0, 1, rules.INCONCLUSIVE),  # an interval touching zero does not exclude it
    (-2.0, -0.5, -1, rules.SUPPORTED), (0.5, 2.0, -1, rules.CONTRADICTED), (-1.0, 1.0, -1, rules.INCONCLUSIVE),
    (math.nan, math.nan, 1, rules.NOT_TESTABLE),
])
def test_our_rule(low: float, high: float, side: int, expected: str) -> None:
    assert rules.verdict(low, high, side) == expected


@pytest.mark.parametrize(("low", "high", "side", "delta", "expected"), [
    (0.2, 0.8, 1, 1.0, rules.SUPPORTED_SMALL),  # above zero and below δ: a real effect, smaller than the margin
    (0.2, 1.2, 1, 1.0, rules.SUPPORTED), (0.2, 0.8, 1, math.nan, rules.SUPPORTED),
    (-0.5, 0.8, 1, 1.0, rules.EQUIVALENT), (-2.0, -0.5, 1, 1.0, rules.CONTRADICTED),
    # "A does not beat B" is non-superiority: supported when the upper end lies below +δ, whatever the lower end
    (-1.2, 0.9, -1, 1.0, rules.SUPPORTED), (0.2, 0.9, -1, 1.0, rules.SUPPORTED), (-1.21, 1.65, -1, 1.0, rules.INCONCLUSIVE),
    (0.5, 1.5, -1, 1.0, rules.INCONCLUSIVE), (1.2, 2.0, -1, 1.0, rules.CONTRADICTED),
])
def test_the_margin_rules(low: float, high: float, side: int, delta: float, expected: str) -> None:
    assert rules.verdict(low, high, side, delta) == expected


def test_a_claim_of_no_gain_is_a_non_superiority_claim() -> None:
    """fulltext ("#4 does not beat #3") was judged as "#4 significantly worse than #3"; an interval below +δ
    that holds zero supports it now, where the old rule said only "no difference larger than δ"."""
    claim = claims.get("fulltext")
    assert claim.side == -1 and claim.test.delta == 1.0
    assert rules.verdict(-0.4, 0.9, claim.side, claim.test.delta) == rules.SUPPORTED
    assert rules.verdict(-0.4, 0.9, 1, claim.test.delta) == rules.EQUIVALENT  # what the claim-of-gain rule reads there
    assert rules.verdict_text(rules.SUPPORTED_SMALL, 1.0) == "supported, smaller than 1"


def test_the_paper_effect_test_and_the_interval_never_disagree() -> None:
    """The paper's effect is excluded exactly when the interval's end on its side lies short of it, and
    exactly when p < 0.05; effects placed on draws (ties) and between them, on both sides of zero."""
    rng = np.random.default_rng(7)
    for case in range(300):
        draws = np.round(rng.normal(rng.uniform(-1, 1), rng.uniform(0.1, 2), 499), 1)  # many ties
        effect = float(rng.choice(draws)) if case % 2 else float(rng.uniform(-4, 4))
        if effect == 0:
            continue
        p, excluded, end = rules.paper_effect_test(draws, effect)
        low, high = S.order_interval(draws)
        assert end == (high if effect > 0 else low)
        assert excluded == (end < effect if effect > 0 else end > effect) == (p < rules.ALPHA), (case, effect, end, p)
    # by hand: 499 draws 0.00, 0.01, ...; the paper's +4.90 has 9 draws at or beyond it
    p, excluded, end = rules.paper_effect_test(np.arange(499) / 100, 4.90)
    assert p == pytest.approx(19 / 500) and excluded and end < 4.90


def test_welch_sd_is_the_spread_at_which_welch_turns_significant() -> None:
    for diff in (0.26, 1.29, 14.94):
        sd = rules.welch_sd(diff)
        p = [stats.ttest_ind_from_stats(diff, x, 5, 0.0, x, 5, equal_var=False).pvalue
             for x in (0.99 * sd, 1.01 * sd)]
        assert p[0] < 0.05 < p[1]
    paper = evidence.paper_evidence(claims.get("vs-biolinkbert-ner"))  # Table 7 prints means only
    assert paper.welch_sd == pytest.approx(rules.welch_sd(86.28 - 86.02)) and paper.welch_sd < 0.2
    assert evidence.paper_evidence(claims.get("scierc-ner")).welch_sd is None  # Table 4 prints its spread: Welch itself


def test_the_table5_claims_print_the_paper_in_our_statistic() -> None:
    """Ours is the mean over the seven large sets: the paper's column is Table 6's mean over them, the 13-set
    Table 5 average the text quotes kept beside it."""
    expected = {"science-base": ("#1", "#2", 0.85), "scratch-vs-general": ("#3", "#2", 0.02),
                "fulltext": ("#4", "#3", -0.32)}
    for cid, (a, b, printed) in expected.items():
        paper = evidence.paper_evidence(claims.get(cid))
        by_hand = np.mean([tables.cell(6, a, d) - tables.cell(6, b, d) for d in claims.T5_SETS])
        assert paper.diff == pytest.approx(by_hand) and round(paper.diff, 2) == printed
        assert paper.quoted_diff == pytest.approx(tables.cell(5, a, "blurb_avg") - tables.cell(5, b, "blurb_avg"))
        assert "the text quotes" in paper.test


def _tested(**scores: float) -> evidence.Evidence:
    return evidence.Evidence(0.4, -2.4, 3.6, 0.79, "runs", **scores)


def test_design_labels_from_the_data_and_from_the_claim() -> None:
    pubmedqa, hoc, biosses = claims.get("ift-pubmedqa"), claims.get("ift-hoc"), MINILM_BIOSSES
    floor = _tested(a_score=53.6, b_score=53.1, constant=55.2, constant_low=51.0, constant_high=59.6)
    design, detail = rules.design_of(pubmedqa.test, floor)
    assert design == rules.FLOOR and "55.2 [51.0, 59.6]" in detail
    assert rules.verdict_words(rules.INCONCLUSIVE, 2.0, design) == "not testable: floor (measured: inconclusive)"
    learnt = dataclasses.replace(floor, a_score=70.0)  # one arm above the constant's interval: no floor
    assert rules.design_of(pubmedqa.test, learnt)[0] == rules.PROXY  # the declared proxy shows instead
    assert rules.verdict_words(rules.CONTRADICTED, 2.0, rules.design_of(hoc.test, learnt)[0]) == "proxy contradicted"
    design, detail = rules.design_of(biosses.test, _tested(a_score=86.7, b_score=86.9), paper_b=57.68)
    assert design == rules.CEILING and detail.startswith("base scores 86.9 here against 57.7 in the paper")
    assert rules.verdict_words(rules.INCONCLUSIVE, 2.0, design) == "inconclusive, at a ceiling"
    assert rules.design_of(claims.get("scratch-vs-general").test, _tested())[0] == rules.SCALE_MISMATCH
    assert rules.verdict_words(rules.CONTRADICTED, 1.0, rules.SCALE_MISMATCH) == \
        "not testable at this scale (measured: contradicted)"
    assert rules.design_of(claims.get("science-base").test, _tested()) == ("", "")
    assert rules.verdict_words(rules.NOT_TESTABLE, 2.0, rules.PROXY) == rules.NOT_TESTABLE  # nothing measured: nothing to label
    # the verdict a claim counts under: the label where it replaces the measured verdict, the measured one else
    assert rules.verdict_label(rules.CONTRADICTED, 1.0, rules.SCALE_MISMATCH) == "not testable at this scale"
    assert rules.verdict_label(rules.INCONCLUSIVE, 2.0, rules.FLOOR) == "not testable: floor"
    assert rules.verdict_label(rules.CONTRADICTED, 2.0, rules.PROXY) == "proxy contradicted"
    assert rules.verdict_label(rules.EQUIVALENT, 2.0, "") == "no difference larger than 2"
    assert rules.verdict_label(rules.INCONCLUSIVE, 2.0, rules.COMPARABLE) == rules.INCONCLUSIVE
    with pytest.raises(ValueError, match="unknown design label 'bogus'"):
        rules.verdict_label(rules.INCONCLUSIVE, 2.0, "bogus")


def test_a_claim_reads_only_arms_that_share_a_precision() -> None:
    science = claims.get("science-base").test
    mixed = dataclasses.replace(_tested(), precisions=(("bf16",), ("fp32",)))
    design, detail = rules.design_of(science, mixed)
    assert design == rules.PRECISIONS and "#1 in bf16 and #2 in fp32" in detail
    assert rules.verdict_words(rules.INCONCLUSIVE, 1.0, design) == \
        "not testable: the arms differ in precision (measured: inconclusive)"
    assert rules.design_of(science, dataclasses.replace(mixed, precisions=(("fp32",), ("fp32",)))) == ("", "")
    # a declared scale mismatch is shown only once the precisions agree: what the runs cannot read comes first
    scratch = claims.get("scratch-vs-general").test
    assert rules.design_of(scratch, mixed)[0] == rules.PRECISIONS


def test_seed_spreads_from_records(build: Build) -> None:
    spreads = {x.system: x for x in verdicts.seed_spreads(("BIOSSES",), [build.results])}
    base = [r.score_test for r in records.load_records(build.results, profile="cpu-ift", model="minilm", variant="base")]
    assert spreads["cpu-ift/minilm/base"].seeds == 3
    assert spreads["cpu-ift/minilm/base"].sd == pytest.approx(np.std(base, ddof=1))
    assert "cpu/minilm/ift-BioASQ" not in spreads  # one seed: no spread
    assert verdicts.seed_spreads(("BIOSSES", "HoC"), [build.results]) == ()  # no seed has both


def test_paper_rule() -> None:
    assert rules.paper_verdict(None, 1, (), None) == rules.NO_NUMBERS
    assert rules.paper_verdict(1.0, 1, ("a failed check",), 0.001) == rules.INCONSISTENT
    assert rules.paper_verdict(-0.5, 1, (), 0.3) == rules.DISAGREE
    assert rules.paper_verdict(-0.5, -1, (), None) == rules.NO_SPREAD  # "does not beat", printed below: on its side
    assert rules.paper_verdict(1.0, 1, (), 0.01) == rules.SIGNIFICANT
    assert rules.paper_verdict(1.0, 1, (), 0.2) == rules.NOT_SIGNIFICANT


# --------------------------------------------------------------------------- the claims as data


def test_at_least_twelve_claims_with_unique_ids_and_known_sections() -> None:
    assert len(claims.CLAIMS) >= 12 and len({c.id for c in claims.CLAIMS}) == len(claims.CLAIMS)
    for claim in claims.CLAIMS:
        entry = chapters.get(claim.chapter)
        headings = [line.lstrip("#").strip() for cell in nbformat.read(str(entry.source_path), as_version=4).cells
                    if cell.cell_type == "markdown" for line in cell.source.splitlines() if line.startswith("## ")]
        assert claim.anchor in {make_id(h) for h in headings}, (claim.id, claim.anchor, headings)
        if claim.test.kind == "table5":
            assert claims.STUDY_ANCHOR in {make_id(h) for h in headings}, headings
        assert claim.side in (1, -1) and claim.test.kind in ("ift-gain", "ift-domain", "table5", "fields", "none")


def test_the_chapter_follows_the_introduction_and_runs_after_the_chapters_it_reads() -> None:
    assert [c.slug for c in chapters.CHAPTERS][:2] == ["intro", "what_holds_up"]
    order = [c.slug for c in chapters.execution_order()]
    assert order[-2:] == ["intro", "what_holds_up"]


def test_paper_evidence_from_the_printed_numbers() -> None:
    ner = evidence.paper_evidence(claims.get("scierc-ner"))
    mean = {m: tables.cell(4, m, "NER") for m in ("SciDeBERTa v2", "SciDeBERTa")}
    sd = {m: tables.cell(4, m, "NER std") for m in mean}
    welch = stats.ttest_ind_from_stats(mean["SciDeBERTa v2"], sd["SciDeBERTa v2"], 5, mean["SciDeBERTa"],
                                       sd["SciDeBERTa"], 5, equal_var=False)
    assert ner.diff == pytest.approx(1.3) and ner.p == pytest.approx(welch.pvalue) and ner.verdict == rules.SIGNIFICANT
    assert evidence.paper_evidence(claims.get("scierc-jre")).verdict == rules.NOT_SIGNIFICANT  # p 0.067
    assert evidence.paper_evidence(claims.get("scierc-coref")).verdict == rules.DISAGREE  # 56.9 vs 57.4
    assert evidence.paper_evidence(claims.get("fulltext")).verdict == rules.NO_SPREAD  # 76.46 vs 77.38: on the claimed side
    chemprot = evidence.paper_evidence(claims.get("vs-biolinkbert-chemprot"))
    assert chemprot.verdict == rules.INCONSISTENT
    assert "Appendix A: Table 7, MediBioDeBERTa-IFT, Chem Prot" in chemprot.problems
    assert len(chemprot.details) == len(chemprot.problems) and any("77.80" in d for d in chemprot.details)
    qna = evidence.paper_evidence(claims.get("vs-biolinkbert-qna"))
    assert any(p.startswith("cross-source audit") for p in qna.problems)
    assert any("80.80" in d for d in qna.details)  # the QA group mean BioLinkBERT's publication gives
    assert evidence.paper_evidence(claims.get("ift-domain")).verdict == rules.NO_NUMBERS


# --------------------------------------------------------------------------- our evidence, from records


def test_ift_claims_on_records_and_a_changed_record_changes_the_verdict(build: Build) -> None:
    judged = [MINILM_BIOSSES, claims.get("ift-domain")]
    first = {r.id: r for r in verdicts.rows(build.settings, "cpu", judged, resamples=499, recorded=None)}
    gain = first["ift-biosses"]
    assert gain.verdict == rules.SUPPORTED and gain.ours.low > 0
    # the declared arms (STS-B, on the cpu-ift profile), not the best dev score
    assert "cpu-ift/minilm: ift-STS-B (3 seeds) vs base (3 seeds) on BIOSSES, 20 test units" in gain.ours.runs
    runs = [S.runs_of(records.load_records(build.results, profile="cpu-ift", model="minilm", variant=v), build.results, v,
                      "BIOSSES", build.data) for v in ("ift-STS-B", "base")]
    direct = S.multi_bootstrap([tuple(runs)], {"p": ["BIOSSES"]}, 499, evidence.claim_seed("ift-biosses"))["p"]
    assert (gain.ours.diff, gain.ours.low, gain.ours.high, gain.ours.p) == pytest.approx(
        (direct.diff, direct.low, direct.high, direct.p_value))
    assert gain.ours.resampled == "test units, fine-tuning seeds" and gain.ours.resamples == 499
    # dev selection on the judged profile is a labelled row beside it: SICK-R had the best dev score there
    (selected,) = gain.ours.beside
    assert selected.label.startswith("dev-selected") and "ift-SICK-R (2 seeds) vs base" in selected.runs
    assert first["ift-domain"].verdict == rules.SUPPORTED  # STS-B (general) vs BioASQ (biomedical)
    # the IFT runs now predict the opposite of the gold scores: the same claim is contradicted
    for seed in (1, 2, 3):
        build.write("ift-STS-B", seed, noise=0.05, profile="cpu-ift", sign=-1.0)
    again = {r.id: r for r in verdicts.rows(build.settings, "cpu", judged, resamples=499, recorded=None)}
    assert again["ift-biosses"].verdict == rules.CONTRADICTED and again["ift-biosses"].ours.high < 0
    glance = verdicts.overview(list(again.values()))
    turned = again["ift-biosses"]
    row = glance.loc["ift-biosses"]
    assert list(glance.columns) == ["claim", "paper's number", "ours [95%]", "verdict"]
    assert all(isinstance(v, str) for v in glance.to_numpy().ravel())  # no True/False, no floats
    assert row["paper's number"] == f"{turned.paper.diff:+.2f}" == "+35.02"  # Table 7 − Table 6 #1
    assert row["ours [95%]"] == f"{turned.ours.diff:+.2f} [{turned.ours.low:+.2f}, {turned.ours.high:+.2f}]"
    # the declared ceiling is named in the verdict, and the paper's +35 is excluded by our interval
    assert row["verdict"] == (f"contradicted, at a ceiling; the paper's +35.02 is excluded at this scale (upper end "
                              f"{turned.ours.high:+.2f})")
    assert glance.loc["ift-domain", "paper's number"] == "none printed"


def test_a_profile_of_its_own_is_read_from_the_recorded_root_when_the_build_has_none(build: Build,
                                                                                      tmp_path: Path) -> None:
    plain = Settings(data_root=build.data, results_root=tmp_path / "plain", cache_root=tmp_path / "cache")
    row = verdicts.rows(plain, "cpu", [MINILM_BIOSSES], resamples=499, recorded=build.results)[0]
    assert row.verdict == rules.SUPPORTED and "(recorded in reference/)" in row.ours.runs
    assert verdicts.rows(plain, "cpu", [MINILM_BIOSSES], resamples=499, recorded=None)[0].verdict == rules.NOT_TESTABLE


def test_not_testable_without_runs_or_data(build: Build, tmp_path: Path) -> None:
    empty = Settings(data_root=build.data, results_root=tmp_path / "none", cache_root=tmp_path / "cache")
    found = {r.id: r for r in verdicts.rows(empty, "cpu", recorded=None)}
    assert {r.verdict for r in found.values()} == {rules.NOT_TESTABLE}
    assert "STILT" in found["ift-hoc"].ours.needs and "PROFILE=gpu" in found["science-base"].ours.needs
    no_data = Settings(data_root=tmp_path / "absent", results_root=build.results, cache_root=tmp_path / "cache")
    row = verdicts.rows(no_data, "cpu", [claims.get("ift-biosses"), claims.get("medicine-fields")], recorded=None)
    assert [r.verdict for r in row] == [rules.NOT_TESTABLE] * 2 and "data root" in row[0].ours.needs


def test_table5_claims_read_the_declared_statistic_only(build: Build) -> None:
    """The declared statistic is the mean over the seven large BLURB sets: runs on BIOSSES alone leave the
    claim untested, with the plain mean shown beside it (not promoted to the verdict)."""
    tiny = {**MODEL, "name": "/x/model", "tag": "model"}
    for seed in (1, 2):
        build.write("pretrain-table5-1", seed, noise=0.1, model=tiny)
        build.write("pretrain-table5-2", seed, noise=3.0, model=tiny)
    row = verdicts.rows(build.settings, "cpu", [claims.get("science-base")], resamples=499)[0]
    assert row.verdict == rules.NOT_TESTABLE and "large BLURB sets" in row.ours.needs
    (plain,) = row.ours.beside
    assert plain.label == "plain mean over 1 BLURB datasets" and plain.low > 0
    assert "seven large BLURB sets" in row.primary and row.delta == 1.0
    assert row.link == claims.get("science-base").link  # the profile's scaled-down experiments: their section


def test_table5_claims_read_the_cpu_study_recorded_runs(tmp_path: Path) -> None:
    """The CPU study's arms (``study-N`` on ``cpu-study``) test the Table 5 claims from a recorded root; every
    pretraining seed is its own model, resampled beside fine-tuning seeds and test units."""
    recorded = Build(tmp_path / "recorded")
    for pretrain_seed in (1, 2):
        for arm, noise in (("3", 0.3), ("4", 2.0)):
            model = {**MODEL, "name": f"pretrain-run:study/scratch/study-{arm}/c/{pretrain_seed}abc/seed{pretrain_seed}",
                     "tag": f"study-{arm}-s{pretrain_seed}", "hash": f"pretrain-run:{arm}/{pretrain_seed}"}
            for seed in (1, 2):
                recorded.write(f"study-{arm}", seed, noise=noise, model=model,
                               profile="cpu-study")
    build = Build(tmp_path / "build")
    row = verdicts.rows(build.settings, "cpu", [claims.get("fulltext")], resamples=499, recorded=recorded.results)[0]
    assert row.verdict == rules.NOT_TESTABLE and "large BLURB sets" in row.ours.needs  # BIOSSES alone
    (plain,) = row.ours.beside
    assert plain.runs == "BIOSSES" and plain.high < 0  # full text (noisier here) below abstracts
    # the study's runs are shown in the chapter's study section, not the gpu profile's "scaled down" one
    assert row.link == f"tables_5_6_pretraining_configurations.html#{claims.STUDY_ANCHOR}" != claims.get("fulltext").link
    alone = verdicts.rows(build.settings, "cpu", [claims.get("fulltext"), claims.get("science-base")], resamples=499,
                   recorded=None)
    assert [r.ours.beside for r in alone] == [(), ()] and "CPU study" in alone[0].ours.needs


def _ddi_runs(build: Build, arm: str, pretrain_seed: int, wrong: int) -> None:
    """Two fine-tuning seeds of a study arm on a hand-made DDI test split (60 pairs), ``wrong`` of them
    answered wrongly (a different one per seed), from the model of one pretraining seed."""
    gold = ["DDI-effect" if i % 3 == 0 else "DDI-false" for i in range(60)]
    folder = build.data / "blurb" / "DDI"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "test.tsv").write_text("".join(f"d{i}\tA @DRUG$ b @DRUG$.\t{g}\n" for i, g in enumerate(gold)))
    model = {**MODEL, "name": f"pretrain-run:study/scratch/study-{arm}/c/{pretrain_seed}abc/seed{pretrain_seed}",
             "tag": f"study-{arm}-s{pretrain_seed}", "hash": f"pretrain-run:{arm}/{pretrain_seed}"}
    for seed in (1, 2):
        miss = {(3 * (seed + k)) % 60 for k in range(wrong)}  # gold DDI-effect answered DDI-false
        path = RunKey("finetune", "cpu-study", model["tag"], f"study-{arm}", "DDI", seed,
                      "5eed5eed5eed").predictions_path(build.results)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps({"id": f"d{i}", "prediction": "DDI-false" if i in miss else g}) + "\n"
                                for i, g in enumerate(gold)))
        records.write_record(records.RunRecord(
            dataset="DDI", model=model, profile="cpu-study", seed=seed, variant=f"study-{arm}",
            predictions=path.name, score_test=50.0, score_dev=50.0, config_digest="5eed5eed5eed",
            environment={"git_commit": "c0ffee", "device": "cpu"}), build.results)


def test_the_study_tests_a_table5_claim_only_with_both_pretraining_seeds_of_each_arm(tmp_path: Path,
                                                                                    monkeypatch) -> None:
    """One pretraining seed per arm leaves the claim untested (the pretraining seed's variance cannot be
    resampled): the comparison so far is shown beside, with what has been recorded; both seeds test it.
    Here DDI stands for the seven large sets (a real build on some of them is the next test's)."""
    monkeypatch.setattr(claims, "T5_SETS", ("DDI",))
    monkeypatch.setattr(evidence, "T5_SETS", ("DDI",))
    build = Build(tmp_path / "build")
    _ddi_runs(build, "3", 1, wrong=2)
    _ddi_runs(build, "4", 1, wrong=12)
    row = verdicts.rows(build.settings, "cpu", [claims.get("fulltext")], resamples=499, recorded=None)[0]
    assert row.verdict == rules.NOT_TESTABLE
    assert "the study's 2 pretraining seeds of each arm" in row.ours.needs
    assert "study-4: 1 pretraining seed(s); study-3: 1 pretraining seed(s)" in row.ours.needs
    so_far = row.ours.beside[0]
    assert so_far.label.startswith("so far (") and so_far.runs == "DDI" and so_far.high < 0  # #4 answers worse
    _ddi_runs(build, "3", 2, wrong=3)
    _ddi_runs(build, "4", 2, wrong=11)
    row = verdicts.rows(build.settings, "cpu", [claims.get("fulltext")], resamples=499, recorded=None)[0]
    assert row.verdict != rules.NOT_TESTABLE and row.ours.high < 0
    assert "pretraining seeds" in row.ours.resampled and "large BLURB sets (DDI)" in row.ours.runs
    # beside the declared statistic: each set alone (the same draws) and Welch's t over the pretrained models
    alone = next(b for b in row.ours.beside if b.label.startswith("DDI alone"))
    assert (alone.diff, alone.low, alone.high) == (row.ours.diff, row.ours.low, row.ours.high)  # one set here
    welch = next(b for b in row.ours.beside if b.label.startswith("Welch's t over the pretrained models (2 + 2"))
    models = {}
    for arm in ("4", "3"):
        runs = S.runs_of(records.load_records(build.results, variant=f"study-{arm}"), build.results, arm, "DDI",
                         build.data, pretraining=lambda r: r.model["tag"])
        models[arm] = [np.mean([x for x, m in zip(runs.scores, runs.pretraining, strict=True) if m == tag])
                       for tag in sorted(set(runs.pretraining))]
    by_hand = stats.ttest_ind(models["4"], models["3"], equal_var=False)
    assert welch.p == pytest.approx(by_hand.pvalue)
    assert welch.diff == pytest.approx(np.mean(models["4"]) - np.mean(models["3"]))
    assert (welch.low, welch.high) == pytest.approx(tuple(by_hand.confidence_interval(0.95)))
    assert (welch.low > 0 or welch.high < 0) == (welch.p < 0.05)


def test_a_table5_claim_is_not_tested_on_some_of_the_seven_large_sets(tmp_path: Path) -> None:
    """The declared statistic is the mean over all seven large sets: both pretraining seeds of each arm on DDI
    alone (a queue under way, as #2 was after its first fine-tuning runs) leave the claim untested, with the
    mean so far beside it."""
    build = Build(tmp_path / "build")
    for seed, (a, b) in ((1, (2, 12)), (2, (3, 11))):
        _ddi_runs(build, "3", seed, wrong=a)
        _ddi_runs(build, "4", seed, wrong=b)
    row = verdicts.rows(build.settings, "cpu", [claims.get("fulltext")], resamples=499, recorded=None)[0]
    assert row.verdict == rules.NOT_TESTABLE and "every one of the large BLURB sets" in row.ours.needs
    assert "(so far: DDI)" in row.ours.needs
    so_far = row.ours.beside[0]
    assert so_far.label == "so far, mean over 1 of the 7 large sets" and so_far.runs == "DDI" and so_far.high < 0


def test_a_continued_arm_names_the_model_it_continued_in_its_scale(tmp_path: Path) -> None:
    """#2 is MiniLM continued on our 10M tokens, not a model that saw only them: its scale says so, beside #3's
    from scratch; a stage of our own before an arm (the #1 analog: MiniLM, the cs stage, then abstracts) is
    followed back to the model made elsewhere, its tokens counted."""
    import dataclasses

    from medibio.pretrain.lineage import continued_from, model_reference
    from medibio.results.recorded import REFERENCE_ROOT

    def tuned(variant: str) -> list[records.RunRecord]:
        return records.load_records(REFERENCE_ROOT, profile="cpu-study", variant=variant, legacy=False)

    assert "minilm (pretrained elsewhere) continued on 10.0M tokens here, 2 pretraining seeds" in \
        evidence.scale_of(tuned("study-2"), REFERENCE_ROOT)
    assert ", pretrained on 10.0M tokens here, 2 pretraining seeds" in evidence.scale_of(tuned("study-3"), REFERENCE_ROOT)
    (stage,) = records.load_records(REFERENCE_ROOT, kind="pretrain", variant="study-2", legacy=False)[:1]
    records.write_record(stage, tmp_path)
    after = dataclasses.replace(stage, variant="study-1", config_digest="0123456789ab", run_id="",
                                details={**stage.details, "init": {"kind": "continual", "from": model_reference(stage)}})
    records.write_record(after, tmp_path)
    assert continued_from(after.run_id, tmp_path) == ("minilm", (stage.details["tokens_seen"],))
    assert continued_from(stage.run_id, tmp_path) == ("minilm", ())
    assert continued_from("pretrain/no/such/run", tmp_path) is None  # not "from scratch": unknown
    lost = [dataclasses.replace(r, details={**r.details, "pretraining_run": "pretrain/no/such/run"})
            for r in tuned("study-2")]
    assert "pretrained on 10.0M tokens here (from what: its pretraining record is not in this results folder)" \
        in evidence.scale_of(lost, REFERENCE_ROOT)


def test_a_scale_names_the_precision_and_machine_its_runs_computed_on() -> None:
    """Two arms made on two machines (the #1 analog made again in bf16 on another CPU, #2 in fp32) differ by
    those too: each arm's scale names them, and a record without its CPU says so rather than guess."""
    import dataclasses

    from medibio.results.recorded import REFERENCE_ROOT

    study2 = records.load_records(REFERENCE_ROOT, profile="cpu-study", variant="study-2", legacy=False)
    assert evidence.scale_of(study2, REFERENCE_ROOT).endswith("; computed in fp32 on Intel(R) Xeon(R) Processor @ 2.80GHz")
    elsewhere = [dataclasses.replace(r, hyperparameters={**r.hyperparameters, "mixed_precision_used": "bf16"},
                                     environment={**r.environment, "cpu": "AMD EPYC"}) for r in study2[:2]]
    unnamed = [dataclasses.replace(r, environment={"device": "cpu (1 threads) x1"}) for r in study2[2:3]]
    assert evidence.scale_of(elsewhere + unnamed, REFERENCE_ROOT).endswith(
        "; computed in bf16 on AMD EPYC and fp32 on a CPU its record does not name")


def test_runs_of_one_arm_are_told_apart_by_pretrained_model_and_fine_tuning_seed(tmp_path: Path) -> None:
    """The study fine-tunes each pretrained model with the same seeds (1-3): seed 1 of two models is two runs;
    seed 1 twice of one model is two configurations, which is refused."""
    build = Build(tmp_path / "build")
    _ddi_runs(build, "3", 1, wrong=2)
    _ddi_runs(build, "3", 2, wrong=3)
    found = records.load_records(build.results, variant="study-3")
    runs = S.runs_of(found, build.results, "study-3", "DDI", build.data, pretraining=lambda r: r.model["name"])
    assert sorted(runs.seeds) == [1, 1, 2, 2] and len(set(runs.pretraining)) == 2
    again = next(r for r in found if r.seed == 1 and r.model["tag"] == "study-3-s1")
    with pytest.raises(S.SelectionError, match="several runs of seed 1 from pretrain-run:.*/seed1 on DDI"):
        S.runs_of([*found, again], build.results, "study-3", "DDI", build.data,
                  pretraining=lambda r: r.model["name"])
    with pytest.raises(S.SelectionError, match="several runs of seed 1 on DDI"):  # read as one model's seeds
        S.runs_of(found, build.results, "study-3", "DDI", build.data)


def test_field_margin_by_hand() -> None:
    fields = ["Medicine", "Biology", "Chemistry", "Psychology", "Physics"]
    bit = {f: 1 << i for i, f in enumerate(fields)}
    med = bit["Medicine"]
    masks = {med | bit["Biology"]: 30, med | bit["Chemistry"]: 20, med | bit["Psychology"]: 15,
             med | bit["Physics"]: 5, med: 30, bit["Physics"]: 400}
    # C(Medicine, j) x 100: 30, 20, 15 for the three, 5 for Physics; the 400 physics-only papers do not count
    margin, low, high, p, rival = bootstrap.field_margin(masks, fields, "Medicine", ["Biology", "Chemistry", "Psychology"],
                                                 resamples=2000)
    assert margin == pytest.approx(10.0) and rival == "Physics" and low < 10 < high and low > 0 and p < 0.05


# --------------------------------------------------------------------------- the command line


def test_cli_json(build: Build) -> None:
    result = CliRunner().invoke(app, ["claims", "--results-root", str(build.results), "--data-root",
                                      str(build.data), "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["profile"] == "cpu" and "supported" in out["rule"]
    by_id = {c["id"]: c for c in out["claims"]}
    assert len(by_id) == len(claims.CLAIMS) and by_id["ift-biosses"]["verdict"] == rules.SUPPORTED
    # every claim carries the verdict it counts under and a design: "comparable" where no label applies to a
    # tested claim, null where nothing was tested and nothing is declared
    for claim in out["claims"]:
        tested = claim["ours"]["low"] is not None
        assert claim["verdict_label"] == rules.verdict_label(claim["verdict"], claim["delta"] or math.nan,
                                                             claim["design"] or ""), claim["id"]
        assert claim["design"] is not None or not tested, claim["id"]
        assert (claim["design"] == rules.COMPARABLE) <= tested, claim["id"]
        assert claim["design"] in (*rules.DESIGNS[1:], rules.COMPARABLE, None), claim["id"]
    biosses = by_id["ift-biosses"]
    assert biosses["delta"] == 2.0 and "20 test pairs" in biosses["primary"] and biosses["paper_scale"]
    # declared on the study's two #3 models: both pooled, the pretrained model resampled above the seeds
    assert "pretraining seeds" in biosses["ours"]["resampled"] and "study-3" in biosses["ours"]["scale"]
    assert biosses["ours"]["runs"].startswith("cpu-ift/study-3-s1+study-3-s2: ift-STS-B (6 runs: 2 pretrained")
    assert biosses["ours"]["beside"][0]["label"].startswith("dev-selected")
    # MiniLM's runs of the same arms stand beside it, named as the ceiling case
    (ceiling,) = [b for b in biosses["ours"]["beside"] if b["label"].startswith("minilm: the ceiling case")]
    assert ceiling["runs"].startswith("cpu-ift/minilm: ift-STS-B (3 seeds) vs base (3 seeds)")
    assert "proxy" in by_id["ift-hoc"]["proxy"] and "GAD" in by_id["ift-hoc"]["proxy"]
    # reference/ holds HoC runs but this data root has no HoC gold labels: that claim waits, naming the file
    hoc = by_id["ift-hoc"]
    assert hoc["verdict"] == rules.NOT_TESTABLE and "missing data" in hoc["ours"]["needs"] \
        and "HoC/test.tsv" in hoc["ours"]["needs"]
    for claim in out["claims"]:  # interval and p from the same draws: they never disagree
        ours = claim["ours"]
        if ours["low"] is not None:
            assert (ours["low"] > 0 or ours["high"] < 0) == (ours["p"] < 0.05), claim["id"]
    assert by_id["scierc-ner"]["paper"]["verdict"] == rules.SIGNIFICANT and by_id["scierc-ner"]["ours"]["low"] is None
    # the IFT claims' runs are the cpu-ift runs, which the Tables 1-2 chapter leads with (not the STILT matrix)
    for claim in ("ift-biosses", "ift-hoc", "ift-pubmedqa", "ift-domain"):
        assert by_id[claim]["link"] == ("tables_1_2_intermediate_finetuning.html#the-intermediate-fine-tuning-claims-"
                                        "on-the-cpu-ift-runs")
    # the paper's own effect, tested one-sided on the verdict's draws, and the design label beside every verdict
    assert biosses["paper_effect"] == pytest.approx(92.7 - 57.68)
    assert biosses["paper_effect_end"] == biosses["ours"]["high"]
    assert biosses["paper_effect_excluded"] == (biosses["ours"]["high"] < biosses["paper_effect"]) \
        == (biosses["paper_effect_p"] < 0.05)
    assert biosses["design"] == rules.COMPARABLE and biosses["verdict_words"] in ("supported", "supported, smaller than δ")
    assert "draws" not in biosses["ours"] and biosses["ours"]["b_score"] > 0
    assert by_id["scratch-vs-general"]["design"] == rules.SCALE_MISMATCH and hoc["design"] == rules.PROXY
    assert by_id["vs-biolinkbert-ner"]["paper_effect_excluded"] is None
    assert by_id["vs-biolinkbert-ner"]["paper"]["welch_sd"] == pytest.approx(rules.welch_sd(0.26))
    assert {c["design"] for c in out["claims"]} <= {*rules.DESIGNS[1:], rules.COMPARABLE, None}


def test_cli_table_names_every_claim(build: Build) -> None:
    result = CliRunner().invoke(app, ["claims", "--results-root", str(build.results), "--data-root",
                                      str(build.data)], terminal_width=400)
    assert result.exit_code == 0, result.output
    assert all(c.id in result.output for c in claims.CLAIMS) and "supported" in result.output


def test_verdicts_beside_the_recorded_ones(build: Build, tmp_path: Path) -> None:
    """Appendix B's verdict column: a copy of the runs gives the same verdicts; a rebuild whose IFT runs
    turned around changes ift-biosses' verdict, and the row names the boundary its interval crossed."""
    import shutil

    recorded = tmp_path / "recorded"
    shutil.copytree(build.results, recorded)
    judged = [claims.get("ift-biosses"), claims.get("ift-domain")]
    same = verdicts.beside_recorded(build.settings, "cpu", recorded, resamples=499)
    assert same.loc[[c.id for c in judged], "same verdict"].all() and same.loc["ift-biosses", "crossed"] == ""
    # the copy is judged once; judging the recorded root on its own gives the same rows
    alone = verdicts.rows(dataclasses.replace(build.settings, results_root=recorded), "cpu", resamples=499,
                          recorded=recorded)
    assert list(same["reference/"]) == [r.verdict_words for r in alone]  # as What holds up words them
    assert list(same["reference/ A − B [95%]"]) == [verdicts._estimate(r.ours) for r in alone]
    for model in STUDY3:
        for seed in (1, 2, 3):
            build.write("ift-STS-B", seed, noise=0.05, profile="cpu-ift", sign=-1.0, model=model)
    moved = verdicts.beside_recorded(build.settings, "cpu", recorded, resamples=499).loc["ift-biosses"]
    assert (moved["this build"], moved["reference/"]) == (rules.CONTRADICTED, rules.SUPPORTED)
    assert not moved["same verdict"] and "0" in moved["crossed"]


def test_without_the_declared_profile_the_judged_profiles_runs_of_the_declared_arms_test_it(tmp_path: Path) -> None:
    """A build with no cpu-ift runs anywhere judges ift-biosses on its own STS-B and base runs (the declared
    arms, never the dev-selected one), and says which profile's runs those are."""
    made = Build(tmp_path)
    for seed in (1, 2):
        made.write("base", seed, noise=2.0)
        made.write("ift-STS-B", seed, noise=0.05, score_dev=10.0)
        made.write("ift-SICK-R", seed, noise=3.0, score_dev=90.0)  # picked by dev: shown beside only
    row = verdicts.rows(made.settings, "cpu", [MINILM_BIOSSES], resamples=499, recorded=None)[0]
    assert row.verdict == rules.SUPPORTED and row.ours.runs.startswith("cpu/minilm: ift-STS-B (2 seeds) vs base")
    assert "ift-SICK-R" in row.ours.beside[0].runs


def test_a_claim_on_several_pretrained_models_waits_for_all_of_them(tmp_path: Path) -> None:
    """ift-biosses names the study's two #3 models: with one model's runs it is not tested (the runs so far stand
    beside it), and never falls back to another model's runs; with both, the models are one arm's runs."""
    made = Build(tmp_path)
    for seed in (1, 2, 3):
        made.write("base", seed, noise=2.0, profile="cpu-ift")  # MiniLM: beside only
        made.write("ift-STS-B", seed, noise=2.0, profile="cpu-ift")
        made.write("base", seed, noise=2.0, profile="cpu-ift", model=STUDY3[0])
        made.write("ift-STS-B", seed, noise=0.05, profile="cpu-ift", model=STUDY3[0])
    claim = [claims.get("ift-biosses")]
    row = verdicts.rows(made.settings, "cpu", claim, resamples=499, recorded=None)[0]
    assert row.verdict == rules.NOT_TESTABLE and "study-3-s2" in row.ours.needs
    assert [b.label.split(" (")[0] for b in row.ours.beside] == ["minilm: the ceiling case, not the verdict's: "
                                                                 "all-MiniLM-L6-v2 was trained contrastively on "
                                                                 "about a billion sentence pairs for similarity, "
                                                                 "so without IFT it already scores what IFT on "
                                                                 "STS-B is meant to teach", "so far"]
    for seed in (1, 2, 3):
        made.write("base", seed, noise=2.0, profile="cpu-ift", model=STUDY3[1])
        made.write("ift-STS-B", seed, noise=0.05, profile="cpu-ift", model=STUDY3[1])
    row = verdicts.rows(made.settings, "cpu", claim, resamples=499, recorded=None)[0]
    assert row.verdict == rules.SUPPORTED and "pretraining seeds" in row.ours.resampled
    runs = [S.runs_of([r for m in STUDY3 for r in records.load_records(made.results, profile="cpu-ift",
                                                                        model=m["tag"], variant=v)],
                      made.results, v, "BIOSSES", made.data, lambda r: r.model["hash"]) for v in ("ift-STS-B", "base")]
    direct = S.multi_bootstrap([tuple(runs)], {"p": ["BIOSSES"]}, 499, evidence.claim_seed("ift-biosses"))["p"]
    assert (row.ours.diff, row.ours.low, row.ours.high) == pytest.approx((direct.diff, direct.low, direct.high))


def test_runs_made_under_a_limit_say_so_where_a_claim_is_judged_on_them() -> None:
    full = records.RunRecord(dataset="BIOSSES", model={"tag": "minilm"}, profile="cpu", seed=1,
                             request={"limit": None})
    limited = records.RunRecord(dataset="BIOSSES", model={"tag": "minilm"}, profile="cpu", seed=2,
                                request={"limit": 8})
    assert evidence._describe("base", [full]) == "base (1 seed)"
    assert evidence._describe("base", [limited, limited]) == "base (2 seeds, LIMITED to 8 examples per split)"


def test_a_claim_is_judged_once_per_input_and_again_when_an_input_changes(build: Build, monkeypatch) -> None:
    """The chapters that show the same claims on one build (Appendix B, What holds up, Tables 1-2) read each
    claim's row from the evidence cache; a changed gold file, record or argument is judged anew."""
    judged = [MINILM_BIOSSES]
    first = verdicts.rows(build.settings, "cpu", judged, resamples=499, recorded=None)[0]

    def not_again(*args, **kwargs):
        raise AssertionError("judged again on unchanged inputs")

    with monkeypatch.context() as patched:
        patched.setattr(verdicts, "our_evidence", not_again)
        again = verdicts.rows(build.settings, "cpu", judged, resamples=499, recorded=None)[0]
    assert repr(again) == repr(first)  # NaN fields: equal only as text
    with monkeypatch.context() as patched:  # the profile's model named, as a chapter names it: the same claim
        patched.setattr(verdicts, "our_evidence", not_again)
        named = verdicts.rows(build.settings, "cpu", judged, resamples=499, recorded=None, model="minilm")[0]
    assert repr(named) == repr(first)
    calls = []
    original = verdicts.our_evidence
    monkeypatch.setattr(verdicts, "our_evidence", lambda *a, **k: calls.append(a[0].id) or original(*a, **k))
    verdicts.rows(build.settings, "cpu", judged, resamples=299, recorded=None)  # another argument
    gold = build.data / "blurb" / "BIOSSES" / "test.tsv"
    gold.write_text(gold.read_text().replace("\t0.0\n", "\t0.5\n"))  # another gold set
    verdicts.rows(build.settings, "cpu", judged, resamples=499, recorded=None)
    build.write("ift-STS-B", 1, noise=0.05, profile="cpu-ift", sign=-1.0)  # another run record
    changed = verdicts.rows(build.settings, "cpu", judged, resamples=499, recorded=None)[0]
    assert calls == ["ift-biosses"] * 3 and changed.ours.diff < first.ours.diff
