"""The gpu profile's whole book on CPU: every chapter under ``--limit 4`` (issue 14 §2).

The ``gpu`` profile names a hub encoder (``microsoft/deberta-v3-base``), five seeds, bf16, the ``gpu-mini``
pretraining and the five Table 5 experiments: nothing of it runs on this CPU-only project otherwise, so it could
rot unnoticed. Here a temporary Hugging Face cache (:mod:`tests.support.hub_cache`) serves the hub names
offline and ``--limit 4`` keeps 4 examples per split and 4 pretraining steps, as ``medibio book --profile gpu
--limit 4`` does, with fine-tuning in two processes through ``accelerate launch`` (gloo on CPU).
The chapters run fewer tasks and seeds than the profile picks (:data:`tests.support.book.LIMITED_PLAN`:
one dataset per problem type, IFT, STILT, SciERC, the five Table 5 experiments) to stay inside the CI budget.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from medibio.book import chapters
from medibio.runs.records import load_records

pytestmark = [pytest.mark.slow, pytest.mark.realdata]

REPO = Path(__file__).resolve().parents[1]
HUB_MODEL = "microsoft/deberta-v3-base"


@pytest.fixture(scope="module")
def limited(tmp_path_factory, data_root) -> dict:
    base = tmp_path_factory.mktemp("gpu-limited")
    hf_home = base / "hf"
    subprocess.run([sys.executable, "-m", "tests.support.hub_cache", str(hf_home)], check=True, cwd=REPO,
                   capture_output=True)
    env = {**os.environ, "HF_HOME": str(hf_home), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "MEDIBIO_DATA": str(data_root)}
    env.pop("HF_HUB_CACHE", None)
    code = ("import sys; from pathlib import Path; from tests.support import book; "
            "book.limited_book(Path(sys.argv[1]), processes=2)")
    proc = subprocess.run([sys.executable, "-c", code, str(base)], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=3600)
    report_path = base / "limited-book.json"
    assert proc.returncode == 0 and report_path.is_file(), proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(report_path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("chapter", [c for c in chapters.CHAPTERS if c.is_notebook], ids=lambda c: c.slug)
def test_every_chapter_runs_on_the_gpu_profile_under_the_limit(limited, chapter) -> None:
    outcome = limited["chapters"][chapter.slug]
    assert outcome["status"] == "executed", f"{outcome['error']} (cell: {outcome['cell']})"


def test_finetuning_ran_the_gpu_presets_from_the_hub_name(limited) -> None:
    records = load_records(limited["results_root"], profile="gpu")
    assert records, "the gpu profile wrote no fine-tuning record"
    assert {r.model["name"] for r in records} >= {HUB_MODEL}
    hub = [r for r in records if r.model["name"] == HUB_MODEL]
    assert all(r.model["model_type"] == "deberta-v2" for r in hub)  # read from the cached snapshot
    assert {r.num_processes for r in records} == {2}
    assert all(r.train_examples <= limited["limit"] for r in records if r.ok)
    by_dataset = {(r.dataset, r.variant) for r in records}
    assert {("BIOSSES", "base"), ("NCBI-disease", "base"), ("ChemProt", "base"), ("HoC", "base"),
            ("PubMedQA", "base")} <= by_dataset
    assert any(v.startswith("ift-") for _, v in by_dataset)  # intermediate fine-tuning
    biosses = [r for r in records if r.dataset == "BIOSSES" and r.variant == "base"]
    assert sorted(r.seed for r in biosses) == [1]
    # the gpu presets themselves (BLURB epochs, bf16 requested), not the cpu ones
    assert all(r.hyperparameters["epochs"] == 30 and r.hyperparameters["mixed_precision"] == "bf16" for r in biosses)
    assert all("NOT an official score" in " ".join(r.notes) for r in biosses)


def test_scierc_trained_in_two_processes_from_the_hub_name(limited) -> None:
    """The Table 4 chapter under ``--processes 2``: run_scierc went through ``accelerate launch`` too."""
    records = load_records(limited["results_root"], profile="gpu", kind="scierc", legacy=False)
    assert records, "the gpu profile wrote no SciERC record"
    assert {r.num_processes for r in records} == {2} and all(r.ok for r in records)
    assert {r.model["name"] for r in records} == {HUB_MODEL}
    assert all(r.train_examples <= limited["limit"] for r in records)


def test_limited_pretraining_wrote_into_folders_of_its_own(limited) -> None:
    pretrain = Path(limited["results_root"]) / "pretrain"
    names = {p.name for p in pretrain.iterdir()} if pretrain.is_dir() else set()
    assert f"gpu-mini-limit{limited['limit']}" in names, names
    assert "gpu-mini" not in names  # a limited run never passes for the real one


def test_the_five_table5_stages_were_pretrained_and_fine_tuned(limited) -> None:
    """Table 5 on the gpu profile: five gpu-mini stages (limited to 4 steps) each fine-tuned on BIOSSES with
    the plan's seed, from the limited pretraining folder (never from a real gpu-mini result)."""
    records = load_records(limited["results_root"], profile="gpu")
    stages = {}
    for r in records:
        if r.variant.startswith("pretrain-table5-"):
            stages.setdefault(r.variant, set()).add(r.seed)
            # named by the limited pretraining run (planned from its digest), loaded from its folder
            assert r.model["name"].startswith(f"pretrain-run:gpu-mini-limit{limited['limit']}/"), r.model["name"]
            assert f"/pretrain/gpu-mini-limit{limited['limit']}/" in r.model["path"], r.model["path"]
            assert r.ok and r.dataset == "BIOSSES" and r.num_processes == 2
    assert stages == {f"pretrain-table5-{i}": {1} for i in range(1, 6)}
    kinds = {r.variant: r.model["model_type"] for r in records if r.variant.startswith("pretrain-table5-")}
    assert kinds["pretrain-table5-2"] == "bert" and kinds["pretrain-table5-1"] == "deberta-v2"
