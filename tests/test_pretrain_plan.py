"""The pretraining digest: it moves with what decides the trained model and with nothing else."""

from __future__ import annotations

from pathlib import Path

import pytest

from medibio.pretrain.configs import get_config
from medibio.pretrain.plan import effective_config, plan_pretraining

CFG = get_config("smoke")


@pytest.fixture()
def inputs(tmp_path: Path) -> tuple[Path, Path]:
    corpus = tmp_path / "docs.txt"
    corpus.write_text("the kidney filters blood.\n\ninsulin lowers glucose.\n", encoding="utf-8")
    vocab = tmp_path / "tok"
    vocab.mkdir()
    (vocab / "tokenizer.json").write_text('{"model": {}}', encoding="utf-8")
    return corpus, vocab


def _digest(corpus: Path, vocab: Path | None = None, config=CFG, **kwargs) -> str:
    return plan_pretraining(config, str(corpus), tokenizer_dir=vocab, **kwargs).key.config_digest


@pytest.mark.parametrize("change", [{"learning_rate": 5e-4}, {"seed": 7}, {"max_steps": 9},
                                    {"effective_batch": 16}, {"seq_length": 64}, {"mlm_probability": 0.2},
                                    {"whole_word_mask": True}, {"corpus_max_mb": 0.1},
                                    {"text_form": "sumpubmed"}, {"head_warmup_steps": 2}])
def test_a_setting_changes_the_digest(inputs, change) -> None:
    corpus, vocab = inputs
    assert _digest(corpus, vocab, CFG.with_overrides(**change)) != _digest(corpus, vocab)


@pytest.mark.parametrize("change", [{"save_every": 1}, {"keep_checkpoints": 5}, {"log_every": 2},
                                    {"per_device_batch": 2}, {"description": "another text"}])
def test_bookkeeping_leaves_the_digest_alone(inputs, change) -> None:
    corpus, vocab = inputs
    assert _digest(corpus, vocab, CFG.with_overrides(**change)) == _digest(corpus, vocab)


def test_corpus_vocabulary_starting_point_and_limit_change_the_digest(inputs) -> None:
    from medibio.core.settings import Settings
    from medibio.models import zoo as modelzoo

    corpus, vocab = inputs
    base = _digest(corpus, vocab)
    assert _digest(corpus, vocab, variant="fulltext") != base
    corpus.write_text(corpus.read_text(encoding="utf-8") + "\nthe liver stores glycogen.\n", encoding="utf-8")
    after_corpus = _digest(corpus, vocab)
    assert after_corpus != base
    (vocab / "tokenizer.json").write_text('{"model": {"vocab": []}}', encoding="utf-8")
    assert _digest(corpus, vocab) != after_corpus
    scratch = _digest(corpus)
    continual = _digest(corpus, init=str(modelzoo.minilm_path()))
    assert len({scratch, continual, _digest(corpus, vocab)}) == 3
    assert plan_pretraining(CFG, str(corpus), init="minilm").payload["init"] == modelzoo.fingerprint("minilm")
    limited = plan_pretraining(effective_config(CFG, limit=4), str(corpus), settings=Settings(limit=4))
    assert limited.job.config.name == "smoke-limit4" and limited.key.config_digest != scratch
    assert limited.payload["config"]["max_steps"] == 4 and limited.request["limit"] == 4


def test_the_record_is_named_by_config_start_tag_corpus_and_digest(inputs, tmp_path) -> None:
    corpus, _ = inputs
    plan = plan_pretraining(CFG, str(corpus), tag="book")
    assert plan.key.path(tmp_path) == (tmp_path / "pretrain" / "smoke" / "scratch" / "book" / "files"
                                       / plan.key.config_digest / f"seed{CFG.seed}.json")
    moved = tmp_path / "elsewhere" / corpus.name
    moved.parent.mkdir()
    moved.write_bytes(corpus.read_bytes())
    assert plan_pretraining(CFG, str(moved), tag="book").key == plan.key  # same bytes, same name


def test_fields_added_later_leave_earlier_digests_alone(inputs) -> None:
    """At their default, text_form and head_warmup_steps are not part of the identity: the plan's
    configuration is the one runs had before the fields existed (so recorded runs stay current)."""
    corpus, vocab = inputs
    plan = plan_pretraining(CFG, str(corpus), tokenizer_dir=vocab)
    assert not {"text_form", "head_warmup_steps"} & set(plan.payload["config"])
    changed = plan_pretraining(CFG.with_overrides(text_form="sumpubmed"), str(corpus), tokenizer_dir=vocab)
    assert changed.payload["config"]["text_form"] == "sumpubmed"
