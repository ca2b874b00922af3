"""SentencePiece vocabularies: training, offline reload with DebertaV2TokenizerFast, round trip, CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from medibio.pretrain.corpus import iter_documents, iter_sentences
from medibio.pretrain.vocab import train_corpus_vocabulary, train_tokenizer

FIX = Path(__file__).parent / "fixtures" / "pretrain"
TEXT = ("the patient received aspirin daily. the kidney filters blood. insulin lowers glucose in the blood. "
        "the liver stores glycogen. a protein folds into a sheet. the heart pumps blood through the body.")


def _sentences() -> list[str]:
    base = list(iter_sentences(iter_documents(f"{FIX / 'docs.txt'},{FIX / 'shard-00000.jsonl.gz'}",
                                              "fulltext")))
    return base + TEXT.split(". ") * 5


@pytest.fixture(scope="module")
def vocab_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("vocab")
    train_tokenizer(_sentences(), out, vocab_size=120)
    return out


def test_folder_reloads_offline_with_deberta_tokenizer(vocab_dir, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from transformers import DebertaV2TokenizerFast

    assert (vocab_dir / "spm.model").exists() and (vocab_dir / "tokenizer.json").exists()
    tok = DebertaV2TokenizerFast.from_pretrained(str(vocab_dir))
    # DeBERTa-v2 special-token layout: [PAD]=0 [CLS]=1 [SEP]=2 [UNK]=3, plus [MASK]
    assert (tok.pad_token_id, tok.cls_token_id, tok.sep_token_id, tok.unk_token_id) == (0, 1, 2, 3)
    assert tok.mask_token == "[MASK]" and tok.convert_tokens_to_ids("[MASK]") not in (0, 1, 2, 3)
    assert 60 <= len(tok) <= 120


def test_round_trip_tokens(vocab_dir):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(vocab_dir))
    text = "the kidney filters blood and the liver stores glycogen."
    enc = tok(text)
    assert enc["input_ids"][0] == tok.cls_token_id and enc["input_ids"][-1] == tok.sep_token_id
    assert tok.decode(enc["input_ids"], skip_special_tokens=True) == text
    pieces = tok.tokenize(text)
    assert pieces[0].startswith("\u2581") and tok.convert_tokens_to_string(pieces) == text


def test_cli_vocab_train(tmp_path):
    from typer.testing import CliRunner

    from medibio.cli.main import app

    out = tmp_path / "v"
    result = CliRunner().invoke(app, ["vocab", "train", str(FIX / "shard-00000.jsonl.gz"), "--variant",
                                      "fulltext", "--size", "80", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "vocabulary of" in result.output and (out / "tokenizer.json").exists()


@pytest.mark.realdata
def test_vocabulary_on_real_abstracts(data_root, tmp_path):
    tok = train_corpus_vocabulary("biomed-abstracts", tmp_path / "bio", vocab_size=800, max_mb=0.3, root=data_root)
    text = "the expression of the gene was measured in tumour cells."
    assert tok.decode(tok(text)["input_ids"], skip_special_tokens=True) == text
    assert len(tok(text)["input_ids"]) < len(text.split()) * 3  # a real vocabulary, not characters
