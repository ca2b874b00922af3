"""`medibio results list --stale` sees every kind of run: a pretraining run and an intermediate stage go
stale when what they were trained on changes, as fine-tuning runs do (on tiny hand-made data, no data root)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from medibio.core.settings import Settings
from medibio.results.listing import list_records

WORDS = ["the", "kidney", "filters", "blood", "insulin", "lowers", "glucose", "protein", "binds", "receptor",
         "cells", "grow", "tumour", "liver", "stores", "glycogen", "heart", "pumps"]


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(8)) + "."


def _tiny_data(root: Path) -> Path:
    """A data root holding a small BIOSSES and a small STS-B, in their real formats."""
    rng = random.Random(0)
    biosses = root / "blurb" / "BIOSSES"
    biosses.mkdir(parents=True)
    for split, n in (("train", 16), ("dev", 8), ("test", 8)):
        rows = [f"{split}{i}\t{_sentence(rng)}\t{_sentence(rng)}\t{rng.uniform(0, 4):.2f}" for i in range(n)]
        (biosses / f"{split}.tsv").write_text("pair_id\tsent1\tsent2\tscore\n" + "\n".join(rows) + "\n")
    stsb = root / "ift" / "stsb"
    stsb.mkdir(parents=True)
    for split, n in (("train", 16), ("dev", 8), ("test", 8)):
        rows = [f"main-news\tnews\t2012\t{i:04d}\t{rng.uniform(0, 5):.2f}\t{_sentence(rng)}\t{_sentence(rng)}"
                for i in range(n)]
        (stsb / f"sts-{split}.csv").write_text("\n".join(rows) + "\n")
    return root


def _freshness(settings: Settings, kind: str) -> dict[str, str]:
    frame = list_records(settings.results_root, settings, kinds=(kind,))
    return dict(zip(frame["variant"], frame["freshness"], strict=True))


@pytest.mark.slow
def test_a_changed_intermediate_task_makes_its_stage_and_the_target_run_stale(tmp_path: Path) -> None:
    from medibio.finetune.runner import run_finetune

    settings = Settings(data_root=_tiny_data(tmp_path / "data"), results_root=tmp_path / "results",
                        progress=False)
    [record] = run_finetune("BIOSSES", profile="smoke", intermediate="STS-B", settings=settings)
    assert record.ok and record.intermediate == ["STS-B"]
    assert _freshness(settings, "ift-stage") == {"STS-B": "current"}
    assert _freshness(settings, "finetune") == {"ift-STS-B": "current"}

    train = settings.data_root / "ift" / "stsb" / "sts-train.csv"
    train.write_text(train.read_text() + "main-news\tnews\t2012\t9999\t1.00\tone more pair.\tanother pair.\n")
    stale = list_records(settings.results_root, settings, stale_only=True)
    assert set(zip(stale["kind"], stale["freshness"], strict=True)) == {("ift-stage", "stale"), ("finetune", "stale")}
    changed = stale.set_index("kind")["changed"]
    assert changed["ift-stage"].startswith("stages.0.data.ift/stsb/sts-train.csv: ")
    assert changed["finetune"].startswith("intermediate.0.data.ift/stsb/sts-train.csv: ")


@pytest.mark.slow
def test_a_changed_corpus_makes_a_pretraining_run_stale(tmp_path: Path, capsys) -> None:
    from medibio.pretrain.configs import get_config
    from medibio.pretrain.trainer import run_pretraining
    from medibio.pretrain.vocab import train_tokenizer

    rng = random.Random(0)
    corpus = tmp_path / "docs.txt"
    corpus.write_text("\n\n".join(" ".join(_sentence(rng) for _ in range(4)) for _ in range(40)) + "\n")
    vocab = tmp_path / "tok"
    train_tokenizer(corpus.read_text().split("\n"), vocab, vocab_size=60)
    settings = Settings(results_root=tmp_path / "results", cache_root=tmp_path / "cache", progress=False)
    cfg = get_config("smoke").with_overrides(max_steps=2, save_every=2, log_every=1)
    record = run_pretraining(cfg, corpus=str(corpus), tokenizer_dir=vocab, tag="t", progress=False,
                             settings=settings)
    assert record.ok and _freshness(settings, "pretrain") == {"t": "current"}

    corpus.write_text(corpus.read_text() + "\nthe liver stores glycogen.\n")
    stale = list_records(settings.results_root, settings, stale_only=True)
    assert list(stale["kind"]) == ["pretrain"] and list(stale["freshness"]) == ["stale"]
    assert "corpus.files" in stale["changed"].iloc[0]
    from tests.support.cli import run_main

    code, out, _ = run_main(["results", "list", "--stale", "--results-root", str(settings.results_root)], capsys)
    assert code == 0 and "pretrain" in out and "1 stale" in out and "corpus.files" in out
