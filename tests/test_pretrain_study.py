"""The Table 5 study's pretraining: equal tokens per arm, one shared vocabulary, runs trained in resumable units."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from medibio.core.errors import UnknownNameError
from medibio.core.settings import Settings
from medibio.experiments import study, table5
from medibio.pretrain.configs import get_config
from medibio.runs import records

WORDS = ["the", "patient", "kidney", "liver", "insulin", "glucose", "protein", "receptor", "expression", "cdk-",
         "<dig>", "cells", "blood", "dose", "mg", "were", "in", "of", "and", "with"]
# a smoke-sized study: 8 x 32 = 256 tokens a step, a checkpoint every 2 steps
CONFIG = get_config("smoke").with_overrides(text_form="sumpubmed", save_every=2, log_every=1)
TOKENS = 6 * 256


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def settings(tmp_path_factory) -> Settings:
    """A data root holding SumPubMed-shaped abstracts and full texts."""
    root = tmp_path_factory.mktemp("data")
    folder = root / "corpora" / "sumpubmed"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for name in ("abstracts", "fulltext_subset"):
        with gzip.open(folder / f"{name}.jsonl.gz", "wt", encoding="utf-8") as out:
            for i in range(80):
                text = "\n".join(" ".join(rng.choice(WORDS, size=14)) + "." for _ in range(5))
                out.write(json.dumps({"id": i, "text": text}) + "\n")
    work = tmp_path_factory.mktemp("work")
    return Settings(data_root=root, results_root=work / "results", cache_root=work / "cache", progress=False)


def test_every_arm_sees_the_same_tokens() -> None:
    cfg = get_config(table5.CONFIG)
    assert table5.steps_for(table5.TOKENS, cfg) == 1_221 and table5.steps_for(table5.PILOT_TOKENS, cfg) == 611
    steps = {a: table5.arm_config(table5.STUDY.get_arm(a), 1, table5.TOKENS).max_steps for a in table5.STUDY.arms}
    assert steps == {"0": 0, "2": 1_221, "3": 1_221, "4": 1_221, "cs": 611, "1": 1_221}
    minilm = table5.arm_config(table5.STUDY.get_arm("#2"), 1, table5.TOKENS)
    assert minilm.head_warmup_steps == 0  # MiniLM's new head learns with the encoder (benchmarks.head_warmup)
    assert minilm.warmup_steps == 122 and minilm.seed == 1 and minilm.text_form == "sumpubmed"
    with pytest.raises(UnknownNameError, match="study arm"):
        table5.STUDY.get_arm("5")


def test_a_run_trains_in_units_that_resume(settings) -> None:
    arm = table5.STUDY.get_arm("3")
    with pytest.raises(ValueError, match="does not end on a checkpoint"):
        study.run_unit(arm, 1, TOKENS, settings, unit_steps=3, config=CONFIG)
    assert study.steps_done(arm, 1, TOKENS, settings, CONFIG) == 0
    assert study.run_unit(arm, 1, TOKENS, settings, unit_steps=2, config=CONFIG) == 2
    steps, seconds = study.progress(arm, 1, TOKENS, settings, CONFIG)  # `medibio study status` reads it
    assert steps == 2 and seconds > 0 and study.steps_done(arm, 1, TOKENS, settings, CONFIG) == 2
    lines = study.status_lines(settings, TOKENS, "smoke", CONFIG)
    assert f"#3 seed 1: 2/6 steps, {seconds / 3600:.2f} h (about {seconds * 2 / 3600:.1f} h more at its pace)" \
        in lines[[line.startswith("#3 seed 1:") for line in lines].index(True)]
    assert f"about {seconds * 2 / 3600:.1f} CPU-hours more of pretraining" in lines[-1]
    assert study.run_unit(arm, 1, TOKENS, settings, unit_steps=2, config=CONFIG) == 4
    record = study.run_unit(arm, 1, TOKENS, settings, unit_steps=2, config=CONFIG)
    assert record.ok and record.details["steps_done"] == 6 and record.details["resumed_from"] == [2, 4]
    assert record.details["tokens_seen"] == TOKENS and record.variant == "study-3"
    assert study.progress(arm, 1, TOKENS, settings, CONFIG) == (6, record.wall_time_s)
    assert record.wall_time_s > seconds  # the step time of all three units


def test_random_init_is_a_record_on_the_shared_vocabulary(settings) -> None:
    from transformers import AutoTokenizer

    from medibio.pretrain.trainer import model_folder
    from medibio.pretrain.vocab import is_sumpubmed_form

    floor = study.run_unit(table5.STUDY.get_arm("0"), 1, TOKENS, settings, unit_steps=2, config=CONFIG)
    scratch = study.run_unit(table5.STUDY.get_arm("4"), 1, 2 * 256, settings, unit_steps=2, config=CONFIG)
    assert floor.ok and floor.details["steps_done"] == 0 and floor.details["tokens_seen"] == 0
    assert scratch.details["corpus"]["variant"] == "fulltext"
    assert floor.details["tokenizer"]["fingerprint"] == scratch.details["tokenizer"]["fingerprint"]
    tokenizer = AutoTokenizer.from_pretrained(model_folder(floor, settings))
    assert is_sumpubmed_form(tokenizer) and (model_folder(floor, settings) / "config.json").exists()
    assert (Path(settings.cache_root) / "study" / f"tokenizer-{CONFIG.name}" / "tokenizer.json").exists()


def _first_step_of_a_queue(settings: Settings, calls: str, start, out: str) -> None:
    """What each queue of ``make study`` does first, in its own process: ask for the shared vocabulary. Its
    training is counted and made slow, so that both processes ask before either has finished."""
    train = study.train_corpus_vocabulary

    def slow(*args, **kwargs):
        with open(calls, "a", encoding="utf-8") as fh:
            fh.write(f"{os.getpid()}\n")
        time.sleep(1.0)
        return train(*args, **kwargs)

    study.train_corpus_vocabulary = slow
    start.wait(60)
    Path(out).write_text(str(study.study_tokenizer(settings, CONFIG)), encoding="utf-8")


def test_two_queues_starting_on_an_empty_work_root_share_one_vocabulary(settings, tmp_path) -> None:
    """Both queues ask for the shared vocabulary at once: one trains it, the other waits for it, and both go
    on with the same finished folder (before, the second trained into the first's folder and died)."""
    import multiprocessing

    from transformers import AutoTokenizer

    from medibio.pretrain.vocab import is_sumpubmed_form

    empty = settings.replace(results_root=tmp_path / "results", cache_root=tmp_path / "cache")
    fork = multiprocessing.get_context("fork")
    start, calls = fork.Event(), tmp_path / "calls.txt"
    queues = [fork.Process(target=_first_step_of_a_queue, args=(empty, str(calls), start, str(tmp_path / q)))
              for q in ("a", "b")]
    for queue in queues:
        queue.start()
    start.set()
    for queue in queues:
        queue.join(300)
    assert [q.exitcode for q in queues] == [0, 0]
    folder = study.tokenizer_folder(empty, CONFIG)
    assert {(tmp_path / q).read_text(encoding="utf-8") for q in ("a", "b")} == {str(folder)}
    assert len(calls.read_text(encoding="utf-8").split()) == 1  # trained once
    assert is_sumpubmed_form(AutoTokenizer.from_pretrained(str(folder)))
    assert sorted(p.name for p in folder.parent.iterdir()) == [folder.name]  # no temporary folder, no lock
    # spm.model holds the path it was built at, and the runs' digests cover its bytes: whoever builds it, again
    spm = (folder / "spm.model").read_bytes()
    shutil.rmtree(folder)
    assert (study.study_tokenizer(empty, CONFIG) / "spm.model").read_bytes() == spm


def test_status_command_reads_the_work_root_and_trains_nothing(tmp_path) -> None:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "medibio", "study", "status", "--work-root", str(tmp_path),
                           "--tokens", "5000000"], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    # the pilot's budget: its three sets, with the cpu-study profile's three seeds
    assert "#3 seed 1: 0/611 steps, 0.00 h; fine-tuned 0/9 runs, 0 frozen probes, 0.00 h" in lines
    assert "#0 seed 2: 0/0 steps, 0.00 h; fine-tuned 0/9 runs, 0 frozen probes, 0.00 h" in lines
    assert "#1 seed 1: 0/611 steps, 0.00 h; fine-tuned 0/9 runs, 0 frozen probes, 0.00 h" in lines
    assert "#cs seed 1: 0/306 steps, 0.00 h" in lines and len(lines) == 13  # a stage is not fine-tuned
    assert lines[-1].startswith("step time at this budget so far: pretraining 0.00 h, fine-tuning 0.00 h, 0.00 CPU-hours in all")
    assert not any(tmp_path.iterdir())  # no vocabulary built, no folder made


def test_the_pilot_gate_goes_on_when_scratch_beats_random_by_three_points() -> None:
    scores = {"0": {"BC5-chem": [40.0, 42.0], "ChemProt": [20.0]}, "3": {"BC5-chem": [45.0, 45.0], "ChemProt": [22.0]},
              "4": {"BC5-chem": [44.0], "ChemProt": [23.0]}}
    gate = table5.pilot_gate(scores)
    assert gate["scratch_minus_random"] == {"BC5-chem": 4.0, "ChemProt": 2.0} and gate["mean_gain"] == 3.0
    assert gate["go"] and gate["fulltext_minus_abstracts"] == {"BC5-chem": -1.0, "ChemProt": 1.0}
    assert not table5.pilot_gate(scores, margin=3.5)["go"]
    with pytest.raises(ValueError, match="missing"):
        table5.pilot_gate({"0": {"BC5-chem": [40.0]}, "3": {}})


@pytest.mark.slow
def test_the_pilot_fine_tunes_finished_arms_and_names_unfinished_ones(settings, tmp_path) -> None:
    """#0 and #3 of the smoke-sized study on a BLURB fixture under the smoke profile: the fine-tuning runs read
    the arms' SumPubMed-form tokenizers, and the gate is judged on their test scores."""
    import dataclasses
    import os

    from medibio.book import study as chapter
    from medibio.core.errors import MedibioError

    root = tmp_path / "data"
    (root / "corpora").mkdir(parents=True)
    os.symlink(Path(settings.data_root) / "corpora" / "sumpubmed", root / "corpora" / "sumpubmed")
    os.symlink(Path(__file__).parent / "fixtures" / "blurb" / "root" / "blurb", root / "blurb")
    here = dataclasses.replace(settings, data_root=root)
    options = {"arms": ("0", "3"), "tasks": ("BC5-chem",), "tokens": TOKENS, "profile": "smoke", "config": CONFIG}
    with pytest.raises(MedibioError, match="arm #0 .* has 0 of 0 steps; `medibio study unit --arm 0"):
        study.finetune_arms(dataclasses.replace(here, results_root=tmp_path / "empty"), **options)
    for arm in ("0", "3"):
        study.run_unit(table5.STUDY.get_arm(arm), 1, TOKENS, here, unit_steps=6, config=CONFIG)
    result = study.pilot(here, **options)
    assert set(result["scores"]) == {"0", "3"} and len(result["scores"]["3"]["BC5-chem"]) == 1
    assert result["mean_gain"] == result["scratch_minus_random"]["BC5-chem"] and isinstance(result["go"], bool)

    # the runs start from the pretraining run by name: planned from its digest, found where its weights are not
    runs = study.finetune_arms(here, **options, probes=True)
    scratch = runs["3"][0]
    assert scratch.model["name"].startswith("pretrain-run:smoke/scratch/study-3/biomed-abstracts/")
    assert scratch.model["tag"] == "study-3-s1" and scratch.variant == f"study-3-{TOKENS}tokens"
    assert scratch.details["pretraining_tokens"] == TOKENS
    records_only = tmp_path / "records-only"
    shutil.copytree(here.results_root, records_only, ignore=shutil.ignore_patterns("model", "checkpoints"))
    assert not list(records_only.rglob("*.safetensors"))
    again = study.finetune_arms(dataclasses.replace(here, results_root=records_only), **options, probes=True)
    assert [r.run_id for rs in again.values() for r in rs] == [r.run_id for rs in runs.values() for r in rs]
    assert again["3"][0].score_test == scratch.score_test
    probe = records.load_records(records_only, kind="frozen", model="study-3-s1")
    assert [(r.dataset, r.model["hash"]) for r in probe] == [("BC5-chem", scratch.model["hash"])]
    # `medibio study status`: one of the seven large sets fine-tuned with the smoke profile's seed, one probe
    done = study.finetune_progress(here, "3", 1, TOKENS, "smoke", CONFIG)
    assert done[:3] == (1, 7, 1) and done.seconds == pytest.approx(scratch.wall_time_s + probe[0].wall_time_s)
    assert study.finetune_progress(here, "4", 1, TOKENS, "smoke", CONFIG) == (0, 7, 0, 0.0)  # not pretrained
    lines = study.status_lines(here, TOKENS, "smoke", CONFIG)
    steps, seconds = study.progress(table5.STUDY.get_arm("3"), 1, TOKENS, here, CONFIG)
    assert f"#3 seed 1: {steps}/{steps} steps, {seconds / 3600:.2f} h; fine-tuned 1/7 runs, 1 frozen probes, " \
           f"{done.seconds / 3600:.2f} h" in lines
    assert "#cs seed 1: 0/" in "\n".join(lines) and f"fine-tuning {done.seconds / 3600:.2f} h" in lines[-1]

    # the chapter's tables read the records alone
    assert chapter.recorded_pilot(records_only, TOKENS, "smoke")["mean_gain"] == result["mean_gain"]
    made = chapter.pretraining_frame(records_only, "smoke")
    scratch_rows, floor_rows = made[made["arm"] == "#3"], made[made["arm"] == "#0"]
    assert set(scratch_rows["tokens seen (M)"]) == {round(TOKENS / 1e6, 2)} and set(floor_rows["steps"]) == {0}
    assert set(scratch_rows["starts from"]) == {"random initialisation"} and set(scratch_rows["reads"]) == {"SumPubMed abstracts"}
    table = chapter.micro_table6(records_only, TOKENS, "smoke")
    assert list(table.index) == ["ours #0", "ours #3", "paper #3"] and list(table.columns)[0] == "BC5-chem"
    assert table.loc["ours #3", "BC5-chem"] == round(scratch.score_test, 2) and table.loc["paper #3", "BC5-chem"] == 92.39
    assert pd.isna(table.loc["ours #3", "mean of the 7 large sets"])  # one set fine-tuned: no mean of seven
    probed = chapter.micro_probes(records_only, TOKENS, "smoke")  # both arms' models probed on BC5-chem
    assert list(probed.index) == ["#0 frozen", "#3 frozen"] and probed.loc["#3 frozen", "BC5-chem"] == round(probe[0].score_test, 2)
    assert probed.loc["#3 frozen", "probes"] == 1 and probed.loc["#3 frozen", "pretraining seeds"] == 1


def test_the_pilot_names_a_run_without_a_test_score(monkeypatch) -> None:
    from medibio.core.errors import MedibioError
    from medibio.runs.records import RunRecord

    skipped = RunRecord(dataset="BC5-chem", model={"tag": "study-3"}, profile="cpu-study", seed=1, status="skipped",
                        reason="no training split", run_id="finetune/cpu-study/x/base/BC5-chem/seed1@abc")
    monkeypatch.setattr(study, "finetune_arms", lambda settings, **options: {"3": [skipped]})
    with pytest.raises(MedibioError, match=r"pilot arm 3: finetune/cpu-study/x/base/BC5-chem/seed1@abc has no "
                                           r"test score \(skipped: no training split\)"):
        study.pilot(Settings())


def test_the_two_queues_make_every_run_once_pretraining_first() -> None:
    steps = [step for queue in table5.STUDY.queues.values() for step in queue]
    assert sorted(steps) == sorted((kind, arm, seed) for kind in ("pretrain", "finetune") for arm in table5.STUDY.arms
                                   for seed in table5.SEEDS if not (kind == "finetune" and arm == table5.CS_STAGE))
    for queue in table5.STUDY.queues.values():
        for k, (kind, arm, seed) in enumerate(queue):
            if kind == "finetune":
                assert ("pretrain", arm, seed) in queue[:k]
            if table5.STUDY.arms[arm].init == table5.CS_STAGE:  # a stage before the arm that starts from it
                assert ("pretrain", table5.CS_STAGE, seed) in queue[:k]


@pytest.mark.skipif(not Path("/proc/self/autogroup").exists() or shutil.which("setsid") is None,
                    reason="Linux autogroup scheduling and setsid are needed")
def test_a_queue_in_its_own_session_yields_the_cpu_and_a_shell_command_does_not() -> None:
    """Nice values order processes within a session's group only: a queue started with setsid (make study)
    sets its group's nice; a process that does not lead its session (a command in a shell) leaves it alone."""
    import subprocess
    import sys

    # A process in the default group (a session of init's, as under CI) reads /proc/self/autogroup as empty:
    # the probe prints the file's text as it is, and the test looks for the nice value only in a new session.
    probe = ("import json; from medibio.core import launch; done = launch.yield_to_interactive_work(); "
             "print(json.dumps([done, open('/proc/self/autogroup').read()]))")

    def run_probe(*prefix: str) -> tuple[bool, str]:
        done = subprocess.run([*prefix, sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, f"exit {done.returncode}: {done.stderr[-2000:]}"
        yielded, group = json.loads(done.stdout)
        return yielded, group

    yielded, group = run_probe("setsid")
    assert yielded and group.split()[-2:] == ["nice", "10"]
    before = Path("/proc/self/autogroup").read_text()
    yielded, group = run_probe()
    assert not yielded and group == before == Path("/proc/self/autogroup").read_text()


def test_an_unknown_queue_is_named_with_the_known_ones() -> None:
    from typer.testing import CliRunner

    from medibio.cli.main import app

    result = CliRunner().invoke(app, ["study", "queue", "z"])
    assert result.exit_code != 0 and "unknown queue 'z'; known: a, b" in result.output


@pytest.mark.slow
def test_a_run_records_its_held_out_mlm_loss_on_blurb_text(settings, tmp_path) -> None:
    """With ``heldout_per_set`` the record holds the MLM loss on BLURB's NER dev sentences, the same masked
    pieces for every model of one tokenizer; the setting is not part of the run's identity."""
    import dataclasses
    import os

    from medibio.pretrain import heldout, mlm
    from medibio.pretrain.trainer import model_folder

    root = tmp_path / "data"
    (root / "corpora").mkdir(parents=True)
    os.symlink(Path(settings.data_root) / "corpora" / "sumpubmed", root / "corpora" / "sumpubmed")
    chem = root / "blurb" / "BC5CDR-chem"
    chem.mkdir(parents=True)
    rng = np.random.default_rng(1)
    for split in ("train", "dev", "test"):
        sentences = ["".join(f"{w}\tO\n" for w in rng.choice(WORDS, size=12)) for _ in range(40)]
        (chem / f"{split}.tsv").write_text("\n".join(sentences) + "\n")
    here = dataclasses.replace(settings, data_root=root, results_root=tmp_path / "results")
    config = CONFIG.with_overrides(heldout_per_set=30)
    assert study._plan(table5.STUDY.arms["3"], 1, TOKENS, here, config).key == study._plan(
        table5.STUDY.arms["3"], 1, TOKENS, here, CONFIG).key
    record = study.run_unit(table5.STUDY.get_arm("3"), 1, TOKENS, here, unit_steps=6, config=config)
    found = record.details["heldout"]
    assert found["sets"] == ["BC5-chem"] and found["sentences"] == 30 and found["masked_pieces"] > 0
    model, tokenizer = mlm.load_checkpoint(str(model_folder(record, here)))[:2]
    again = heldout.heldout_loss(model, tokenizer, config, root, 30)
    assert again == found and np.isfinite(found["loss"])


@pytest.mark.slow
@pytest.mark.realdata
def test_the_science_route_starts_from_its_own_cs_stage(data_root, tmp_path) -> None:
    """#1 continues the same seed's ``cs`` stage (MiniLM continued on computer-science text), named by that run
    rather than by its weights; it waits for the stage, and its new head is the stage's (no second warm-up)."""
    from medibio.core.errors import MedibioError
    from medibio.models import zoo

    here = Settings(data_root=data_root, results_root=tmp_path / "results", cache_root=tmp_path / "cache",
                    progress=False)
    tokens = 4 * 256
    science = table5.STUDY.get_arm("1")
    assert study.steps_done(science, 1, tokens, here, CONFIG) == 0  # waits for its stage, trains nothing
    with pytest.raises(MedibioError, match="starts from the stage `cs`, which has not finished"):
        study.run_unit(science, 1, tokens, here, unit_steps=2, config=CONFIG)
    stage = study.run_unit(table5.STUDY.get_arm("cs"), 1, tokens, here, unit_steps=2, config=CONFIG)
    assert stage.details["steps_done"] == 2 and stage.details["corpus"]["spec"] == "cs"
    assert study.run_unit(science, 1, tokens, here, unit_steps=2, config=CONFIG) == 2
    record = study.run_unit(science, 1, tokens, here, unit_steps=2, config=CONFIG)
    assert record.details["steps_done"] == 4 and record.details["init"]["from"].startswith(zoo.RUN_PREFIX)
    assert record.model["tag"] == "study-cs-s1" and record.hyperparameters["head_warmup_steps"] == 0


def test_the_pretraining_table_names_the_corpus_each_arm_reads() -> None:
    """The cs stage reads computer-science full texts: "fulltext" alone read as SumPubMed's (the recorded
    stage was shown so at first)."""
    from medibio.book.study import pretraining_frame
    from medibio.results.recorded import REFERENCE_ROOT

    made = pretraining_frame(REFERENCE_ROOT)
    reads = dict(zip(made["arm"], made["reads"], strict=True))
    assert reads["#cs"].startswith("computer-science papers") and reads["#4"] == "SumPubMed full texts"
    assert reads["#2"] == reads["#3"] == "SumPubMed abstracts" and reads["#0"] == "nothing"


def test_the_pretraining_table_says_each_runs_precision_and_its_fine_tuning_runs() -> None:
    """A run made again in bf16 on another CPU is another run beside the fp32 one; the table tells them apart,
    and shows which pretrained models were fine-tuned (the cs stage only through #1)."""
    from medibio.book.study import curves_frame, pretraining_frame
    from medibio.results.recorded import REFERENCE_ROOT

    made = pretraining_frame(REFERENCE_ROOT)
    general = made[(made["arm"] == "#2") & (made["budget"] == "study")]
    assert list(general["precision"]) == ["fp32", "fp32"] and list(general["fine-tuning runs"]) == [21, 21]
    assert set(made.loc[made["arm"] == "#cs", "fine-tuning runs"]) == {0}
    assert set(made["precision"]) <= {"fp32", "bf16"}
    runs = set(curves_frame(REFERENCE_ROOT)["run"])
    assert "#2 seed 1 (fp32)" in runs and not any("pilot" in run for run in runs)  # the study's runs alone
    # #3 made again in the same precision on another machine: one line, the newest record's
    assert sum(run.startswith("#3 seed 1 ") for run in runs) == 1


def test_a_fine_tuned_models_tokens_count_every_stage_of_ours(tmp_path: Path) -> None:
    """The #1 analog saw the cs stage's tokens and then the abstracts': micro Table 6's tokens column counts
    both (15M, not the last stage's 10M), and nothing for a model from scratch beyond its own run."""
    import dataclasses

    from medibio.book.study import _tokens_here
    from medibio.pretrain.lineage import model_reference
    from medibio.results.recorded import REFERENCE_ROOT
    from medibio.runs import records

    cs = records.load_records(REFERENCE_ROOT, kind="pretrain", variant="study-cs", legacy=False)[0]
    records.write_record(cs, tmp_path)
    one = dataclasses.replace(cs, variant="study-1", config_digest="0123456789ab", run_id="",
                              details={**cs.details, "tokens_seen": 10_000_000,
                                       "init": {"kind": "continual", "from": model_reference(cs)}})
    records.write_record(one, tmp_path)

    def tuned(made: records.RunRecord) -> records.RunRecord:
        return records.RunRecord(dataset="DDI", model={}, profile="cpu-study", seed=1,
                                 details={"pretraining_tokens": made.details["tokens_seen"],
                                          "pretraining_run": made.run_id})

    assert _tokens_here(tuned(one), tmp_path) == cs.details["tokens_seen"] + 10_000_000 > 15_000_000
    assert _tokens_here(tuned(cs), tmp_path) == cs.details["tokens_seen"]  # MiniLM's own training is not ours
