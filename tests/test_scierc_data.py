"""SciERC reading: global offsets, span enumeration, windows, and errors that name file, document and line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from medibio.core.errors import InputFormatError
from medibio.tasks import scierc as data

TINY = Path(__file__).parent / "fixtures" / "scierc" / "tiny.json"


def test_reads_documents_with_global_offsets() -> None:
    docs = data.read_documents(TINY)
    assert [d.doc_key for d in docs] == ["D1", "D2"]
    d1 = docs[0]
    assert d1.n_words == 9 and d1.sentence_starts() == [0, 5]
    assert d1.entities[1] == ((5, 5, "Generic"), (7, 7, "Metric"))
    assert d1.words()[7] == "accuracy"
    assert d1.relations[0] == ((0, 0, 2, 3, "USED-FOR"),)
    assert d1.clusters == (((2, 3), (5, 5)),)
    assert data.label_counts(docs) == {"documents": 2, "sentences": 3, "entities": 6, "relations": 3,
                                       "clusters": 1, "mentions": 2}


def test_span_enumeration_stays_in_sentences() -> None:
    d1 = data.read_documents(TINY)[0]
    spans = data.enumerate_spans(d1, max_width=2)
    # sentence 0 has 5 words: 5 of width 1 + 4 of width 2; sentence 1 has 4 words: 4 + 3
    assert len(spans) == 9 + 7
    assert (4, 5, 0) not in spans and (4, 5, 1) not in spans  # would cross the sentence boundary
    assert (2, 3, 0) in spans and (7, 8, 1) in spans
    assert all(e - s < 2 for s, e, _ in spans)
    assert spans == sorted(spans, key=lambda t: (t[2], t[0], t[1]))


class _Tok:
    """A whitespace tokenizer that splits every word into one piece per 3 characters."""

    cls_token_id, sep_token_id, unk_token_id = 1, 2, 0
    bos_token_id = eos_token_id = None

    def __call__(self, words, is_split_into_words, add_special_tokens):
        ids, wids = [], []
        for w, word in enumerate(words):
            for k in range(0, len(word), 3):
                ids.append(10 + w * 10 + k)
                wids.append(w)

        class _Enc(dict):
            def word_ids(self):
                return wids

        return _Enc(input_ids=ids)


def test_windows_cover_every_word_once_with_context() -> None:
    d1 = data.read_documents(TINY)[0]
    tok = _Tok()
    whole, lost = data.make_windows(d1, tok, max_length=64)
    assert lost == 0 and len(whole) == 1 and list(whole[0].core_words) == list(range(9))
    # 10 pieces + 2 specials: each sentence (8 pieces) in its own window, the rest of the room is context
    small, lost = data.make_windows(d1, tok, max_length=12)
    assert lost == 0 and [list(w.core_words) for w in small] == [list(range(5)), list(range(5, 9))]
    covered = sorted(w for win in small for w in win.word_first)
    assert covered == list(range(9))
    second = small[1]
    assert second.input_ids[0] == 1 and second.input_ids[-1] == 2 and len(second.input_ids) <= 12
    assert second.word_first[5] == 2  # the left context "." precedes the core sentence
    assert small[0].input_ids[-2] == 10 + 5 * 10  # right context "It" follows it in the first window
    assert second.input_ids[second.word_first[7]] == 10 + 7 * 10  # first piece of "accuracy"
    assert second.word_last[7] == second.word_first[7] + 2  # "accuracy" = 3 pieces


def _write(tmp_path: Path, doc: dict) -> Path:
    good = json.loads(TINY.read_text().splitlines()[1])
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(good) + "\n" + json.dumps(doc) + "\n")
    return path


def _doc(**changes) -> dict:
    doc = json.loads(TINY.read_text().splitlines()[0])
    doc.update(changes)
    return doc


@pytest.mark.parametrize(("changes", "expected"), [
    ({"ner": [[[0, 0, "Generic"], [4, 5, "Method"]], []]}, "entity inside sentence 0"),
    ({"ner": [[[0, 0, "Gizmo"]], []], "relations": [[], []], "clusters": []}, "an entity type in"),
    ({"relations": [[[0, 0, 2, 3, "CAUSES"]], []]}, "a relation type in"),
    ({"relations": [[[0, 0, 1, 1, "USED-FOR"]], []]}, "relation arguments that are entities"),
    ({"clusters": [[[2, 3]], [[2, 3], [5, 5]]]}, "each mention in one cluster"),
    ({"clusters": [[[3, 3], [5, 5]]]}, "mention with the boundaries of the entity it overlaps"),
    ({"clusters": [[[3, 6]]]}, "mention inside one sentence"),
    ({"ner": [[[0, 0, "Generic"]]]}, "one 'ner' list per sentence (2)"),
])
def test_malformed_input_names_file_line_document(tmp_path, changes, expected) -> None:
    path = _write(tmp_path, _doc(**changes))
    with pytest.raises(InputFormatError) as err:
        data.read_documents(path)
    message = str(err.value)
    assert f"{path}:2" in message and "document 'D1'" in message and expected in message


def test_bad_json_and_repeated_mention(tmp_path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"doc_key": "x", \n')
    with pytest.raises(InputFormatError, match=r"broken.json:1: expected a SciERC document as one JSON object, "
                                               r"got 'invalid JSON"):
        data.read_documents(path)
    doc = data.read_documents(_write(tmp_path, _doc(clusters=[[[2, 3], [5, 5], [5, 5]]])))[1]
    assert doc.clusters == (((2, 3), (5, 5)),) and "repeated in cluster 0" in doc.notes[0]


@pytest.mark.realdata
def test_real_splits_read(data_root) -> None:
    counts = {s: data.label_counts(data.load_split(s, data_root)) for s in data.SPLITS}
    assert [counts[s]["documents"] for s in data.SPLITS] == [350, 50, 100]
    assert counts["train"]["entities"] == 5598 and counts["train"]["relations"] == 3219
    assert counts["train"]["clusters"] == 720


@pytest.mark.parametrize("k", [None, 0, 2, 10])
def test_negative_sampling_keeps_every_positive_and_at_most_k_negatives(k) -> None:
    """``ner_negatives`` / ``relation_negatives``: every gold item stays in the loss, negatives are sampled."""
    import torch

    from medibio.scierc.model import NULL, SpanModel

    torch.manual_seed(0)
    target = torch.tensor([0, 3, 0, 0, 1, 0, 0, 0, 2, 0])
    keep = SpanModel._sample(target, k)
    kept = target[keep]
    positives = int((target != NULL).sum())
    assert int((kept != NULL).sum()) == positives
    negatives = int((target == NULL).sum())
    assert int((kept == NULL).sum()) == (negatives if k is None or k >= negatives else k)
    assert len(set(keep.tolist())) == len(keep)


def _tiny_bytes() -> bytes:
    return TINY.read_bytes()


# The SciERC readers, gold documents and predictions, follow the one text policy (issue 20): a leading BOM is
# dropped (as the README says), one inside the file, non-UTF-8 bytes or a compressed file are one error naming
# the file and line.
def _read_gold(path: Path) -> list:
    return [d.doc_key for d in data.read_documents(path)]


def _read_predictions(path: Path) -> list:
    from medibio.tasks import scierc_predictions

    docs, preds = scierc_predictions.read(path, data.read_documents(TINY))
    return [p["doc_key"] for p in preds]


def _predictions_bytes() -> bytes:
    rows = [json.loads(line) for line in TINY.read_text().splitlines()]
    return "".join(json.dumps({"doc_key": r["doc_key"], "entities": [e for s in r["ner"] for e in s],
                               "relations": [x for s in r["relations"] for x in s], "clusters": r["clusters"]}) + "\n"
                   for r in rows).encode()


SCIERC_READERS = [(_read_gold, _tiny_bytes), (_read_predictions, _predictions_bytes)]


@pytest.mark.parametrize(("read", "content"), SCIERC_READERS, ids=["gold", "predictions"])
def test_scierc_readers_drop_a_leading_bom_and_accept_crlf(tmp_path, read, content) -> None:
    path = tmp_path / "file.json"
    path.write_bytes(b"\xef\xbb\xbf" + content().replace(b"\n", b"\r\n"))
    assert read(path) == ["D1", "D2"]


@pytest.mark.parametrize(("read", "content"), SCIERC_READERS, ids=["gold", "predictions"])
@pytest.mark.parametrize(("defect", "fragment"), [
    (lambda b: b.replace(b'"D2"', b'"D\xe92"'), "the byte 0xe9 at column"),
    (lambda b: b.replace(b'{"doc_key": "D2"', b'\xef\xbb\xbf{"doc_key": "D2"'), "a byte-order mark (U+FEFF) only"),
])
def test_scierc_readers_refuse_what_the_text_policy_refuses(tmp_path, read, content, defect, fragment) -> None:
    path = tmp_path / "file.json"
    path.write_bytes(defect(content()))
    with pytest.raises(InputFormatError) as err:
        read(path)
    assert err.value.path == path and err.value.line == 2 and fragment in str(err.value)


@pytest.mark.parametrize(("read", "content"), SCIERC_READERS, ids=["gold", "predictions"])
def test_scierc_readers_refuse_a_compressed_file(tmp_path, read, content) -> None:
    import gzip

    path = tmp_path / "file.json"
    path.write_bytes(gzip.compress(content()))
    with pytest.raises(InputFormatError, match=r"file.json:1: expected a plain UTF-8 text file, got 'gzip"):
        read(path)


@pytest.mark.parametrize(("read", "content"), SCIERC_READERS, ids=["gold", "predictions"])
def test_scierc_readers_say_a_directory_or_broken_link_is_one(tmp_path, read, content) -> None:
    from medibio.core.errors import NotAFileError

    (tmp_path / "folder.json").mkdir()
    with pytest.raises(NotAFileError, match=r"folder.json: expected a file, got a directory$"):
        read(tmp_path / "folder.json")
    (tmp_path / "link.json").symlink_to(tmp_path / "gone.json")
    with pytest.raises(NotAFileError, match=r"link.json: expected a file, got a broken symbolic link to .*gone.json"):
        read(tmp_path / "link.json")
