"""SentencePiece vocabularies: training, offline reload with DebertaV2TokenizerFast, round trip, CLI; the
SumPubMed text form."""

from __future__ import annotations

from pathlib import Path

import pytest

from medibio.pretrain.corpus import iter_documents, iter_sentences
from medibio.pretrain.vocab import (
    in_sumpubmed_form,
    is_sumpubmed_form,
    train_corpus_vocabulary,
    train_tokenizer,
)

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


# BLURB's form and SumPubMed's of one text: cased with numbers, lower-cased with <dig>
CASED = "CDK-2 binds Ca2+ in DC3000 cells at 0.5 mg/kg"
SUMPUBMED = "cdk- <dig> binds ca <dig> + in dc <dig> cells at <dig> mg/kg"


def _same_ids(tokenizer) -> None:
    cased, lowered = tokenizer(CASED)["input_ids"], tokenizer(SUMPUBMED)["input_ids"]
    assert cased == lowered and tokenizer.convert_tokens_to_ids("[MASK]") == tokenizer.mask_token_id
    assert tokenizer.decode(cased).count("dig") == 4


def test_minilm_in_sumpubmed_form_reads_both_corpora_alike(tmp_path):
    from transformers import AutoTokenizer

    from medibio.models.zoo import load_tokenizer

    bert = load_tokenizer("minilm")
    assert not is_sumpubmed_form(bert) and bert(CASED)["input_ids"] != bert(SUMPUBMED)["input_ids"]
    form = in_sumpubmed_form(bert)
    assert len(form) == len(bert) + 1  # <dig>, which WordPiece would split into <, dig, >
    _same_ids(form)
    words = form(CASED.split(), is_split_into_words=True)  # how the NER tasks call it
    assert max(w for w in words.word_ids() if w is not None) == len(CASED.split()) - 1
    form.save_pretrained(tmp_path)
    again = AutoTokenizer.from_pretrained(tmp_path)  # the form travels with the saved tokenizer
    assert is_sumpubmed_form(again) and in_sumpubmed_form(again) is again
    _same_ids(again)


def test_a_vocabulary_trained_in_sumpubmed_form(tmp_path):
    from transformers import AutoTokenizer

    corpus = tmp_path / "docs.txt"
    corpus.write_text("\n\n".join([SUMPUBMED + ". " + TEXT] * 40), encoding="utf-8")
    out = tmp_path / "tok"
    tok = train_corpus_vocabulary(str(corpus), out, vocab_size=90, variant="fulltext", text_form="sumpubmed")
    _same_ids(tok)
    again = AutoTokenizer.from_pretrained(out)
    _same_ids(again)
    assert again.tokenize("7") == tok.tokenize("<dig>") and "<dig>" in "".join(again.tokenize("7"))
    with pytest.raises(ValueError, match="text form"):
        train_corpus_vocabulary(str(corpus), tmp_path / "x", vocab_size=90, text_form="upper")
