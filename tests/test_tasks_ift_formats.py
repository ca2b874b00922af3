"""Intermediate-task files follow the text policy of the BLURB files (medibio.tasks.formats): strict UTF-8
named by line and column, a byte-order mark dropped, CRLF and trailing blank lines accepted, a blank line
inside the file or a file without a record an error naming the file and line (issue 12)."""

from __future__ import annotations

import gzip
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from medibio.core.errors import InputFormatError
from medibio.tasks import ift_formats as loaders

SICK_HEADER = ("pair_ID\tsentence_A\tsentence_B\tentailment_label\trelatedness_score\tentailment_AB\tentailment_BA\t"
               "sentence_A_original\tsentence_B_original\tsentence_A_dataset\tsentence_B_dataset\tSemEval_set")


def _sick(pair: int, score: str, split: str) -> str:
    return f"{pair}\tA kid plays.\tA child plays.\tENTAILMENT\t{score}\tA_entails_B\tB_entails_A\tx\ty\tFLICKR\tFLICKR\t{split}"


@dataclass(frozen=True)
class Reader:
    """A valid file of one intermediate-task format, and how to read it to rows."""

    name: str
    suffix: str
    lines: tuple[str, ...]
    read: Callable[[Path], list[dict]]
    first_text: Callable[[list[dict]], str]


def _rows(out: dict | list) -> list[dict]:
    return [row for split in out.values() for row in split] if isinstance(out, dict) else out


READERS = (
    Reader("stsb", ".csv", ("main-captions\tMSRvid\t2012test\t0001\t5.000\tA man is dancing.\tA man dances.",
                            "main-captions\tMSRvid\t2012test\t0002\t1.500\tA cat sleeps.\tDogs bark."),
           lambda p: loaders.read_stsb(p, "train"), lambda rows: rows[0]["text"]),
    Reader("sick", ".txt", (SICK_HEADER, _sick(1, "4.5", "TRAIN"), _sick(2, "3.2", "TRIAL"), _sick(3, "1.0", "TEST")),
           lambda p: _rows(loaders.read_sick(p, "relatedness")), lambda rows: rows[0]["id"]),
    Reader("clinicalsts", ".tsv", ("The patient is stable.\tPatient stable.\t4.0", "Take one pill.\tNo pills.\t1.0"),
           lambda p: loaders.read_clinicalsts(p, "cs"), lambda rows: rows[0]["text"]),
    Reader("scirepeval_jsonl", ".jsonl", ('{"corpus_id": 1, "title": "Statins", "abstract": "", "n": 2.5}',
                                          '{"corpus_id": 2, "title": "Insulin", "abstract": "", "n": 1.0}'),
           lambda p: loaders.read_scirepeval_docs(p, "n", "regression"), lambda rows: rows[0]["text"]),
)
IDS = [r.name for r in READERS]


def _write(tmp_path: Path, reader: Reader, data: bytes) -> Path:
    path = tmp_path / f"{reader.name}{reader.suffix}"
    path.write_bytes(data)
    return path


def _valid(reader: Reader, newline: str = "\n") -> bytes:
    return (newline.join(reader.lines) + newline).encode("utf-8")


@pytest.mark.parametrize("reader", READERS, ids=IDS)
def test_bom_crlf_and_trailing_blank_lines_are_accepted(tmp_path: Path, reader: Reader) -> None:
    plain = reader.read(_write(tmp_path, reader, _valid(reader)))
    for data in (b"\xef\xbb\xbf" + _valid(reader), _valid(reader, "\r\n"), _valid(reader) + b"\n \n\n",
                 _valid(reader).rstrip(b"\n")):
        rows = reader.read(_write(tmp_path, reader, data))
        assert rows == plain  # the BOM never becomes part of the first text or id
    assert not reader.first_text(plain).startswith("\ufeff")


@pytest.mark.parametrize("reader", READERS, ids=IDS)
def test_invalid_utf8_is_named_by_line_and_column(tmp_path: Path, reader: Reader) -> None:
    lines = [line.encode("utf-8") for line in reader.lines]
    lines[1] = lines[1][:3] + b"\xe9" + lines[1][3:]
    path = _write(tmp_path, reader, b"\n".join(lines) + b"\n")
    with pytest.raises(InputFormatError) as info:
        reader.read(path)
    assert info.value.path == path and info.value.line == 2
    assert "0xe9 at column 4, which is not UTF-8" in str(info.value)


@pytest.mark.parametrize("reader", READERS, ids=IDS)
@pytest.mark.parametrize(("defect", "line", "fragment"), [
    ("empty", 1, "an empty file"),
    ("blank_only", 1, "a file of blank lines only"),
    ("inner_blank", 2, "not a blank line"),
    ("gzip", 1, "gzip-compressed data"),
    ("nul", 2, "a NUL byte"),
    ("inner_bom", 2, "a byte-order mark (U+FEFF) only as the first character of the file"),
])
def test_malformed_text_is_one_error_naming_file_and_line(tmp_path: Path, reader: Reader, defect: str, line: int,
                                                          fragment: str) -> None:
    data = {"empty": b"", "blank_only": b"\n\n \n",
            "inner_blank": ("\n".join([reader.lines[0], "", *reader.lines[1:]]) + "\n").encode(),
            "gzip": gzip.compress(_valid(reader)),
            "nul": ("\n".join([reader.lines[0], "\x00" + reader.lines[1], *reader.lines[2:]]) + "\n").encode(),
            "inner_bom": b"\xef\xbb\xbf" + ("\n".join([reader.lines[0], "\ufeff" + reader.lines[1], *reader.lines[2:]])
                                        + "\n").encode()}[defect]
    path = _write(tmp_path, reader, data)
    with pytest.raises(InputFormatError) as info:
        reader.read(path)
    assert info.value.path == path and info.value.line == line and fragment in str(info.value)


def test_sick_without_a_semeval_split_names_the_missing_one(tmp_path: Path) -> None:
    sick = READERS[1]
    path = _write(tmp_path, sick, ("\n".join(sick.lines[:3]) + "\n").encode())
    with pytest.raises(InputFormatError, match="pairs of every SemEval_set .*none for TEST"):
        sick.read(path)


def test_scirepeval_json_array_follows_the_policy(tmp_path: Path) -> None:
    path = tmp_path / "val.json"
    path.write_bytes(b'\xef\xbb\xbf[{"corpus_id": 1, "title": "T", "n": 1}]\n')
    assert loaders.read_scirepeval_docs(path, "n", "regression")[0]["id"] == "1"
    path.write_bytes(b"[]\n")
    with pytest.raises(InputFormatError, match="a non-empty JSON array of objects"):
        loaders.read_scirepeval_docs(path, "n", "regression")
    path.write_bytes(b'[{"title": "caf\xe9"}]\n')
    with pytest.raises(InputFormatError, match="val.json:1: expected UTF-8 text"):
        loaders.read_scirepeval_docs(path, "n", "regression")


def test_non_finite_scores_are_refused(tmp_path: Path) -> None:
    stsb = READERS[0]
    path = _write(tmp_path, stsb, ("\n".join([stsb.lines[0], stsb.lines[1].replace("1.500", "inf")]) + "\n").encode())
    with pytest.raises(InputFormatError, match=r":2: expected a similarity score \(a finite number\)"):
        stsb.read(path)


@pytest.mark.parametrize("reader", READERS, ids=IDS)
@pytest.mark.parametrize("what", ["directory", "broken_link"])
def test_a_directory_or_broken_link_is_said_to_be_one(tmp_path: Path, reader: Reader, what: str) -> None:
    from medibio.core.errors import DataMissingError, NotAFileError

    path = tmp_path / f"{reader.name}{reader.suffix}"
    if what == "directory":
        path.mkdir()
    else:
        path.symlink_to(tmp_path / "gone")
    with pytest.raises(NotAFileError) as info:
        reader.read(path)
    assert str(info.value).startswith(f"{path}: expected a file, got a ")
    assert ("directory" if what == "directory" else "broken symbolic link") in str(info.value)
    assert not isinstance(info.value, DataMissingError)
