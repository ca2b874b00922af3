"""Corpus building: readers, variants, dedup, sentence packing into fixed blocks, streaming, block cache."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from medibio.core.errors import DataMissingError, InputFormatError
from medibio.pretrain import corpus as C

FIX = Path(__file__).parent / "fixtures" / "pretrain"
SHARD = FIX / "shard-00000.jsonl.gz"


class WordTokenizer:
    """A stand-in tokenizer: one id per whitespace word (enough to test packing exactly)."""

    cls_token_id, sep_token_id = 1, 2

    def __init__(self) -> None:
        self.vocab: dict[str, int] = {}

    def __call__(self, texts, add_special_tokens=False):
        return {"input_ids": [[self.vocab.setdefault(w, len(self.vocab) + 10) for w in t.split()] for t in texts]}

    def get_vocab(self):
        return {"[CLS]": 1, "[SEP]": 2}


def test_abstract_variant_reads_the_abstract_field():
    docs = list(C.read_jsonl(SHARD, "abstract"))
    assert [d.id for d in docs] == ["p1", "p2", "p3", "p4"]
    assert docs[0].text.startswith("aspirin reduces")
    assert docs[3].text == ""  # null abstract: no text for this variant (counted as empty, not skipped silently)


def test_fulltext_variant_joins_abstract_and_body():
    docs = {d.id: d.text for d in C.read_jsonl(SHARD, "fulltext")}
    assert "aspirin reduces" in docs["p1"] and "bleeding was rare" in docs["p1"]
    assert "high fat diet" in docs["p2"] and "glucose levels rose" in docs["p2"]  # S2ORC-style body list
    assert docs["p4"] == "only a body here: the protein folds into a beta sheet."


def test_dedup_is_by_normalised_text_hash_and_counted():
    stats = C.CorpusStats()
    docs = list(C.iter_documents(str(SHARD), "abstract", stats=stats))
    assert [d.id for d in docs] == ["p1", "p2"]  # p3 = p1 up to case/spacing; p4 has no abstract
    assert (stats.documents, stats.duplicates, stats.empty) == (2, 1, 1)
    no_dedup = list(C.iter_documents(str(SHARD), "abstract", dedup=False))
    assert len(no_dedup) == 3


def test_malformed_json_names_file_and_line():
    with pytest.raises(InputFormatError) as err:
        list(C.read_jsonl(FIX / "bad.jsonl"))
    assert err.value.line == 2 and err.value.path.name == "bad.jsonl"


def test_record_without_text_field_is_an_error_not_a_skip():
    with pytest.raises(InputFormatError, match="'text', 'abstract' or 'body'") as err:
        list(C.read_jsonl(FIX / "nofield.jsonl"))
    assert err.value.line == 2


def test_text_files_split_documents_on_blank_lines():
    docs = list(C.read_text_file(FIX / "docs.txt"))
    assert len(docs) == 3
    assert docs[1].id == "docs.txt:4" and docs[1].text.startswith("the liver")


def test_folder_of_shards_and_mixtures(tmp_path):
    (tmp_path / "a.jsonl").write_text('{"id": 1, "text": "first doc."}\n', encoding="utf-8")
    (tmp_path / "b.txt").write_text("second doc.\n", encoding="utf-8")
    docs = list(C.iter_documents(f"{tmp_path},{FIX / 'docs.txt'}"))
    assert [d.text for d in docs[:3]] == ["first doc.", "the kidney filters blood and removes waste.\n"
                                          "it also balances electrolytes.", "second doc."]  # interleaved


def test_missing_corpus_is_a_data_missing_error(tmp_path):
    with pytest.raises(DataMissingError):
        list(C.iter_documents(str(tmp_path / "absent.jsonl")))
    with pytest.raises(DataMissingError):
        list(C.iter_documents("biomed-abstracts", root=tmp_path))


def test_size_cap_stops_the_stream():
    stats = C.CorpusStats()
    docs = list(C.iter_documents(str(FIX / "docs.txt"), max_mb=50e-6, stats=stats))
    assert len(docs) == 1 and stats.truncated


def test_sentence_split_handles_lowercase_text():
    assert C.split_sentences("the cell divides. then it grows!\nnext line? yes") == [
        "the cell divides.", "then it grows!", "next line?", "yes"]


def test_blocks_have_fixed_length_with_cls_and_sep():
    tok = WordTokenizer()
    docs = list(C.read_text_file(FIX / "docs.txt"))
    blocks = list(C.iter_blocks(docs, tok, block_size=8))
    n_words = sum(len(d.text.split()) for d in docs)
    assert all(len(b) == 8 and b[0] == 1 and b[-1] == 2 for b in blocks)
    # body = 6 tokens per block; the stream holds every word plus one [SEP] per document
    assert len(blocks) == (n_words + len(docs)) // 6
    first_body = blocks[0][1:-1]
    assert first_body == [tok.vocab[w] for w in docs[0].text.split()[:6]]


def test_streaming_dataset_yields_blocks():
    ds = C.as_iterable_dataset(str(FIX / "docs.txt"), WordTokenizer(), block_size=8)
    rows = list(itertools.islice(iter(ds), 3))
    assert len(rows) == 3 and all(len(r["input_ids"]) == 8 for r in rows)


def test_block_cache_roundtrip_and_reuse(tmp_path):
    tok = WordTokenizer()
    cache = C.cached_blocks(str(FIX / "docs.txt"), tok, 8, cache_dir=tmp_path / "c")
    expected = list(C.iter_blocks(C.read_text_file(FIX / "docs.txt"), WordTokenizer(), 8))
    assert len(cache) == len(expected) and cache[0].tolist() == expected[0]
    assert cache.meta["stats"]["documents"] == 3
    again = C.BlockCache(tmp_path / "c")
    assert again[len(again) - 1].tolist() == expected[-1]


@pytest.mark.realdata
def test_named_corpora_read_the_real_data(data_root):
    bio = list(itertools.islice(C.iter_documents("biomed-abstracts", root=data_root), 3))
    assert [d.id for d in bio] == ["1", "2", "3"] and "BACKGROUND" in bio[0].text
    full = next(C.iter_documents("biomed-fulltext", "fulltext", root=data_root))
    assert full.id == "1" and len(full.text) > 5 * len(bio[0].text)  # same article, full text
    cs = list(itertools.islice(C.iter_documents("cs", "fulltext", root=data_root), 6))
    assert {d.source for d in cs} == {"scisummnet", "unarxive", "scitldr"}
    sci_abs = next(C.iter_documents("scisummnet-abstracts", root=data_root))
    assert sci_abs.id == "A00-1031" and sci_abs.text.startswith("Trigrams'n'Tags")
