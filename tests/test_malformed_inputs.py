"""Every kind of malformed input, in every input format: one error naming the file, the line and what was
expected (issue 12). Also what is accepted on purpose (a leading byte-order mark, CRLF, trailing blank lines,
no final newline), and examples shared between two splits (test leakage) for every dataset whose ids allow it.

The matrix is (format x kind): each case writes one fixture (a valid file with one defect) into a fake data
root and reads it through the loaders (``loaders.read_rows``, what ``data check``, fine-tuning and scoring
use) or, for prediction files, through ``predictions.read_predictions``.
"""

from __future__ import annotations

import gzip
import io
import json
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from medibio.cli import data as data_cli
from medibio.core.errors import DataMissingError, InputFormatError, NotAFileError
from medibio.tasks import datacheck as check
from medibio.tasks import loaders, predictions, registry
from medibio.tasks.overlap import KNOWN_CONTENT_OVERLAPS, ContentOverlap
from medibio.tasks.overlap import digest as content_digest


def _hoc(on: set[int], sentence: str, index: str) -> str:
    return ",".join(f"{k}_{int(k in on)}" for k in range(10)) + f"\t{sentence}\t{index}"


@dataclass(frozen=True)
class Fmt:
    """A valid file of one input format, and where its columns are."""

    name: str
    dataset: str
    relpath: str  # under <root>/blurb/ (or the prediction folder)
    lines: tuple[str, ...]
    first: int  # index of the first example line
    id_col: int | None = None  # tab-separated formats: column of the example id
    text_col: int | None = None
    label_col: int | None = None
    bad_label: str = ""
    header: bool = False

    @property
    def tabular(self) -> bool:
        return self.name not in ("pubmedqa_json", "predictions", "pubmedqa_ids")


PUBMEDQA_JSON = (
    "{",
    '  "11": {"QUESTION": "Does X help?", "CONTEXTS": ["We tested X.", "X helped."], "final_decision": "yes"},',
    '  "22": {"QUESTION": "Is Y safe?", "CONTEXTS": ["Y was given."], "final_decision": "maybe"},',
    '  "33": {"QUESTION": "Does Z work?", "CONTEXTS": ["Z failed."], "final_decision": "no"}',
    "}",
)

FORMATS = (
    Fmt("conll_bio", "NCBI-disease", "NCBI-disease/train.tsv",
        ("Aspirin\tB", "causes\tO", "fever\tB", "", "Pain\tB", "persists\tO"), 0,
        text_col=0, label_col=1, bad_label="B-Disease"),
    Fmt("conll_pico", "EBM-PICO", "ebmnlp/train.tsv",
        ("-DOCSTART- (900)", "", "Patients\tI-PAR", "received\tO", "aspirin\tI-INT", "", "Pain\tI-OUT", "fell\tO"),
        2, text_col=0, label_col=1, bad_label="B"),
    Fmt("re_tsv", "ChemProt", "chemprot/train.tsv",
        ("1.T1.T2\t@CHEMICAL$ inhibits @GENE$ .\tCPR:4", "2.T1.T2\t@CHEMICAL$ and @GENE$ .\tfalse",
         "3.T2.T1\t@GENE$ binds @CHEMICAL$ .\tCPR:3"), 0, id_col=0, text_col=1, label_col=2, bad_label="CPR:10"),
    Fmt("gad_tsv", "GAD", "GAD/train.tsv",
        ("index\tsentence\tlabel", "0\t@GENE$ causes @DISEASE$ .\t1", "1\t@GENE$ and @DISEASE$ .\t0",
         "2\t@GENE$ in @DISEASE$ .\t1"), 1, id_col=0, text_col=1, label_col=2, bad_label="2", header=True),
    Fmt("biosses_tsv", "BIOSSES", "BIOSSES/train.tsv",
        ("pair_id\tsent1\tsent2\tscore", "7\tA cat sat .\tA cat is sitting .\t3.8",
         "8\tDogs bark .\tStocks fell .\t0.0", "9\tCells grow .\tCells divide .\t2.5"), 1,
        id_col=0, text_col=1, label_col=3, bad_label="high", header=True),
    Fmt("hoc_tsv", "HoC", "HoC/train.tsv",
        ("labels\tsentence\tindex", _hoc({8}, "Cells grow .", "100_s1"), _hoc(set(), "We study cells .", "100_s0"),
         _hoc({0}, "Tumours spread .", "200_s0")), 1,
        id_col=2, text_col=1, label_col=0, bad_label=",".join(f"{k}_{2 if k == 1 else 0}" for k in range(10)),
        header=True),
    Fmt("bioasq_tsv", "BioASQ", "BioASQ/train.tsv",
        ("q1\tIs aspirin an NSAID?\tAspirin is an NSAID.\tyes", "q2\tIs water toxic?\tWater is safe.\tno",
         "q3\tIs X a drug?\tX is a drug.\tyes"), 0, id_col=0, text_col=1, label_col=3, bad_label="maybe"),
    Fmt("pubmedqa_ids", "PubMedQA", "pubmedqa/indexing/train_pmid.tsv", ("11", "22", "33"), 0),
    Fmt("pubmedqa_json", "PubMedQA", "pubmedqa/ori_pqal.json", PUBMEDQA_JSON, 1),
    Fmt("predictions", "BioASQ", "BioASQ.jsonl",
        ('{"id": "q1", "prediction": "yes"}', '{"id": "q2", "prediction": "no"}',
         '{"id": "q3", "prediction": "yes"}'), 0),
)
BY_NAME = {f.name: f for f in FORMATS}


def _bytes(lines: list[str] | tuple[str, ...], newline: str = "\n", final: bool = True) -> bytes:
    return (newline.join(lines) + (newline if final else "")).encode("utf-8")


def _write(fmt: Fmt, root: Path, content: bytes) -> Path:
    """Write a clean copy of every file the format's dataset needs, then ``content`` as the file under test."""
    if fmt.name == "predictions":
        path = root / fmt.relpath
    else:
        path = root / "blurb" / fmt.relpath
        if fmt.dataset == "PubMedQA":
            for other in ("pubmedqa_json", "pubmedqa_ids"):
                clean = root / "blurb" / BY_NAME[other].relpath
                clean.parent.mkdir(parents=True, exist_ok=True)
                clean.write_bytes(_bytes(BY_NAME[other].lines))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return path


def _read(fmt: Fmt, root: Path) -> list:
    if fmt.name == "predictions":
        return list(predictions.read_predictions(root / fmt.relpath, fmt.dataset).items())
    rows = loaders.read_rows(registry.get(fmt.dataset), "train", root)
    return [{k: v for k, v in row.items()} for row in rows]


# --------------------------------------------------------------------------- the malformed kinds


@dataclass(frozen=True)
class Case:
    content: bytes
    line: int
    fragments: tuple[str, ...]
    file: str | None = None  # the file the error must name (default: the file under test)


Kind = Callable[[Fmt], Case | None]


def _edit_line(fmt: Fmt, index: int, new: str | None) -> list[str]:
    lines = list(fmt.lines)
    if new is None:
        del lines[index]
    else:
        lines[index] = new
    return lines


def _set_col(fmt: Fmt, index: int, col: int, value: str) -> list[str]:
    parts = fmt.lines[index].split("\t")
    parts[col] = value
    return _edit_line(fmt, index, "\t".join(parts))


def invalid_utf8(fmt: Fmt) -> Case:
    lines = [line.encode() for line in fmt.lines]
    lines[fmt.first] = lines[fmt.first][:4] + b"\xff" + lines[fmt.first][4:]
    column = len(fmt.lines[fmt.first][:4]) + 1
    return Case(b"\n".join(lines) + b"\n", fmt.first + 1, ("UTF-8", "0xff", f"column {column}"))


def latin1_text(fmt: Fmt) -> Case:
    """The everyday cause of non-UTF-8 bytes: a file saved as Latin-1 (here with one 'é')."""
    lines = list(fmt.lines)
    lines[fmt.first] = lines[fmt.first][:1] + "\u00e9" + lines[fmt.first][1:]
    return Case("\n".join(lines).encode("latin-1") + b"\n", fmt.first + 1, ("UTF-8", "0xe9", "column 2"))


def utf16(fmt: Fmt) -> Case:
    return Case("\n".join(fmt.lines).encode("utf-16"), 1, ("UTF-16",))


def gzipped(fmt: Fmt) -> Case:
    return Case(gzip.compress(_bytes(fmt.lines)), 1, ("gzip", "plain UTF-8 text"))


def zipped(fmt: Fmt) -> Case:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("train.tsv", _bytes(fmt.lines))
    return Case(buffer.getvalue(), 1, ("zip archive",))


def nul_byte(fmt: Fmt) -> Case:
    lines = [line.encode() for line in fmt.lines]
    lines[fmt.first] = lines[fmt.first][:2] + b"\x00" + lines[fmt.first][2:]
    return Case(b"\n".join(lines) + b"\n", fmt.first + 1, ("NUL byte", "column 3"))


def inner_bom(fmt: Fmt) -> Case:
    """Two files joined with ``cat``: the second one's byte-order mark lands inside the file (issue 20)."""
    index = min(fmt.first + 1, len(fmt.lines) - 1)
    lines = _edit_line(fmt, index, "\ufeff" + fmt.lines[index])
    return Case(_bytes(lines), index + 1, ("a byte-order mark (U+FEFF) only as the first character", "column 1"))


def inner_bom_mid_line(fmt: Fmt) -> Case:
    lines = _edit_line(fmt, fmt.first, fmt.lines[fmt.first][:3] + "\ufeff" + fmt.lines[fmt.first][3:])
    return Case(_bytes(lines), fmt.first + 1, ("byte-order mark", f"column {len(fmt.lines[fmt.first][:3]) + 1}"))


def empty_file(fmt: Fmt) -> Case:
    expected = "valid JSON" if fmt.name == "pubmedqa_json" else "at least one"
    return Case(b"", 1, (expected,))


def blank_lines_only(fmt: Fmt) -> Case:
    expected = "valid JSON" if fmt.name == "pubmedqa_json" else "blank lines only"
    return Case(b"\n \n\n", 1, (expected,))


def header_only(fmt: Fmt) -> Case | None:
    if not fmt.header:
        return None
    return Case(_bytes(fmt.lines[:1]), 2, ("at least one row", "end of file"))


def docstart_only(fmt: Fmt) -> Case | None:
    if fmt.name != "conll_pico":
        return None
    return Case(_bytes(["-DOCSTART- (900)", "", "-DOCSTART- (901)", ""]), 4, ("at least one sentence",))


def missing_header(fmt: Fmt) -> Case | None:
    if not fmt.header:
        return None
    return Case(_bytes(fmt.lines[1:]), 1, ("expected header",))


def wrong_header(fmt: Fmt) -> Case | None:
    if not fmt.header:
        return None
    return Case(_bytes(_edit_line(fmt, 0, fmt.lines[0].upper())), 1, ("expected header",))


def inner_blank_line(fmt: Fmt) -> Case | None:
    if fmt.name.startswith("conll") or fmt.name == "pubmedqa_json":
        return None  # CoNLL separates sentences by blank lines; JSON allows whitespace
    lines = list(fmt.lines)
    lines.insert(fmt.first + 1, "")
    return Case(_bytes(lines), fmt.first + 2, ("not a blank line",))


def too_few_columns(fmt: Fmt) -> Case | None:
    if not fmt.tabular:
        return None
    short = fmt.lines[fmt.first].rsplit("\t", 1)[0]
    return Case(_bytes(_edit_line(fmt, fmt.first, short)), fmt.first + 1, ("tab-separated columns",))


def too_many_columns(fmt: Fmt) -> Case | None:
    if not fmt.tabular:
        return None
    return Case(_bytes(_edit_line(fmt, fmt.first, fmt.lines[fmt.first] + "\textra")), fmt.first + 1,
                ("tab-separated columns",))


def spaces_not_tabs(fmt: Fmt) -> Case | None:
    if not fmt.tabular:
        return None
    return Case(_bytes(_edit_line(fmt, fmt.first, fmt.lines[fmt.first].replace("\t", " "))), fmt.first + 1,
                ("tab-separated columns",))


def bad_label(fmt: Fmt) -> Case | None:
    if fmt.name == "pubmedqa_json":
        return Case(_bytes(_edit_line(fmt, 2, PUBMEDQA_JSON[2].replace('"maybe"', '"perhaps"'))), 3,
                    ("final_decision in {yes, no, maybe} for 22", "perhaps"))
    if fmt.name == "predictions":
        return Case(_bytes(_edit_line(fmt, 1, '{"id": "q2", "prediction": "maybe"}')), 2,
                    ("a label string from {yes, no}", "maybe"))
    if fmt.label_col is None or fmt.name == "biosses_tsv":
        return None
    expected = "comma-separated flags" if fmt.name == "hoc_tsv" else "a label in"
    return Case(_bytes(_set_col(fmt, fmt.first + 1, fmt.label_col, fmt.bad_label)), fmt.first + 2,
                (expected, fmt.bad_label))


def empty_id(fmt: Fmt) -> Case | None:
    if fmt.name == "predictions":
        return Case(_bytes(_edit_line(fmt, 1, '{"id": "", "prediction": "no"}')), 2, ("a non-empty string",))
    if fmt.id_col is None:
        return None
    value = "_s0" if fmt.name == "hoc_tsv" else " "
    expected = "PMID_sN" if fmt.name == "hoc_tsv" else "a non-empty"
    return Case(_bytes(_set_col(fmt, fmt.first + 1, fmt.id_col, value)), fmt.first + 2, (expected,))


def duplicate_id(fmt: Fmt) -> Case | None:
    first, second = fmt.first + 1, fmt.first + 2  # 1-based lines of the first two examples
    if fmt.name == "predictions":
        return Case(_bytes(_edit_line(fmt, 1, '{"id": "q1", "prediction": "no"}')), 2,
                    ("each id once", "'q1'", "line 1"))
    if fmt.name == "pubmedqa_ids":
        return Case(_bytes(["11", "22", "11"]), 3, ("each id once", "'11'", "line 1"))
    if fmt.name == "pubmedqa_json":
        return Case(_bytes(_edit_line(fmt, 2, PUBMEDQA_JSON[2].replace('"22"', '"11"'))), 3,
                    ("each key once", "'11'", "line 2"))
    if fmt.id_col is None:
        return None  # CoNLL sentence ids are generated, never repeated
    dup = fmt.lines[fmt.first].split("\t")[fmt.id_col]
    return Case(_bytes(_set_col(fmt, fmt.first + 1, fmt.id_col, dup)), second,
                ("once", repr(dup), f"line {first}"))


def empty_text(fmt: Fmt) -> Case | None:
    if fmt.name == "pubmedqa_json":
        return Case(_bytes(_edit_line(fmt, 2, PUBMEDQA_JSON[2].replace('"Is Y safe?"', '""'))), 3,
                    ("a non-empty QUESTION for 22",))
    if fmt.text_col is None:
        return None
    return Case(_bytes(_set_col(fmt, fmt.first + 1, fmt.text_col, " ")), fmt.first + 2, ("a non-empty",))


def _score(value: str) -> Kind:
    def kind(fmt: Fmt) -> Case | None:
        if fmt.name != "biosses_tsv":
            return None
        return Case(_bytes(_set_col(fmt, 2, 3, value)), 3, ("a finite numeric score in [0, 4]", repr(value)))

    kind.__name__ = f"score_{value}"
    return kind


def dangling_inside(fmt: Fmt) -> Case | None:
    if fmt.name != "conll_bio":
        return None
    return Case(_bytes(_edit_line(fmt, 4, "Pain\tI")), 5, ("'I' only after 'B' or 'I'",))


def docstart_without_id(fmt: Fmt) -> Case | None:
    if fmt.name != "conll_pico":
        return None
    return Case(_bytes(_edit_line(fmt, 0, "-DOCSTART-")), 1, ("<document id>",))


def hoc_bad_index(fmt: Fmt) -> Case | None:
    if fmt.name != "hoc_tsv":
        return None
    return Case(_bytes(_set_col(fmt, 2, 2, "100-s0")), 3, ("PMID_sN", "100-s0"))


def json_syntax(fmt: Fmt) -> Case | None:
    if fmt.name == "pubmedqa_json":
        return Case(_bytes(_edit_line(fmt, 2, PUBMEDQA_JSON[2].rstrip(","))), 4, ("valid JSON", "delimiter"))
    if fmt.name == "predictions":
        return Case(_bytes(_edit_line(fmt, 1, '{"id": "q2", "prediction": no}')), 2, ("invalid JSON",))
    return None


def json_not_object(fmt: Fmt) -> Case | None:
    if fmt.name == "pubmedqa_json":
        return Case(_bytes(["[", '  "11"', "]"]), 1, ("a JSON object keyed by PMID",))
    if fmt.name == "predictions":
        return Case(_bytes(_edit_line(fmt, 1, '["q2", "no"]')), 2, ('keys "id" and "prediction"',))
    return None


def json_missing_key(fmt: Fmt) -> Case | None:
    if fmt.name == "pubmedqa_json":
        return Case(_bytes(_edit_line(fmt, 3, PUBMEDQA_JSON[3].replace('"final_decision"', '"decision"'))), 4,
                    ("QUESTION, CONTEXTS and final_decision for 33",))
    if fmt.name == "predictions":
        return Case(_bytes(_edit_line(fmt, 2, '{"id": "q3"}')), 3, ('keys "id" and "prediction"',))
    return None


def id_not_in_json(fmt: Fmt) -> Case | None:
    if fmt.name != "pubmedqa_ids":
        return None
    return Case(_bytes(["11", "44"]), 2, ("a PMID present in ori_pqal.json", "'44'"))


KINDS: tuple[Kind, ...] = (
    invalid_utf8, latin1_text, utf16, gzipped, zipped, nul_byte, inner_bom, inner_bom_mid_line, empty_file,
    blank_lines_only, header_only,
    docstart_only, missing_header, wrong_header, inner_blank_line, too_few_columns, too_many_columns,
    spaces_not_tabs, bad_label, empty_id, duplicate_id, empty_text, _score("nan"), _score("inf"),
    _score("-inf"), _score("4.5"), _score("-0.5"), _score("high"), dangling_inside, docstart_without_id,
    hoc_bad_index, json_syntax, json_not_object, json_missing_key, id_not_in_json,
)

MATRIX = [(fmt, kind) for fmt in FORMATS for kind in KINDS if kind(fmt) is not None]


def test_matrix_covers_every_format_and_kind() -> None:
    """Each format meets at least the 8 byte-level kinds; each kind applies to at least one format."""
    per_format = {f.name: sum(1 for g, _ in MATRIX if g is f) for f in FORMATS}
    assert min(per_format.values()) >= 10, per_format
    assert {k.__name__ for _, k in MATRIX} == {k.__name__ for k in KINDS}
    assert {registry.get(f.dataset).reader for f in FORMATS} == set(loaders.INPUT_FORMATS)


@pytest.mark.parametrize(("fmt", "kind"), MATRIX, ids=[f"{f.name}-{k.__name__}" for f, k in MATRIX])
def test_malformed_input_names_file_line_and_expectation(tmp_path: Path, fmt: Fmt, kind: Kind) -> None:
    case = kind(fmt)
    assert case is not None
    path = _write(fmt, tmp_path, case.content)
    with pytest.raises(InputFormatError) as info:
        _read(fmt, tmp_path)
    err = info.value
    assert err.path.name == (case.file or path.name), str(err)
    assert err.line == case.line, str(err)
    message = str(err)
    assert f"{err.path}:{case.line}: expected " in message
    assert "\n" not in message
    for fragment in case.fragments:
        assert fragment in message, message


# --------------------------------------------------------------------------- accepted on purpose


ACCEPTED: dict[str, Callable[[Fmt], bytes]] = {
    "leading_bom": lambda f: b"\xef\xbb\xbf" + _bytes(f.lines),
    "crlf": lambda f: _bytes(f.lines, newline="\r\n"),
    "trailing_blank_lines": lambda f: _bytes(f.lines) + b"\n\n  \n",
    "no_final_newline": lambda f: _bytes(f.lines, final=False),
}


@pytest.mark.parametrize("fmt", FORMATS, ids=[f.name for f in FORMATS])
@pytest.mark.parametrize("variant", list(ACCEPTED))
def test_accepted_variants_read_exactly_like_the_clean_file(tmp_path: Path, fmt: Fmt, variant: str) -> None:
    """One policy for every format: a BOM is dropped (never part of the first id), CRLF and trailing blank
    lines are fine."""
    _write(fmt, tmp_path / "clean", _bytes(fmt.lines))
    _write(fmt, tmp_path / "variant", ACCEPTED[variant](fmt))
    clean, other = _read(fmt, tmp_path / "clean"), _read(fmt, tmp_path / "variant")
    assert other == clean
    assert clean and "\ufeff" not in repr(other)


def test_bom_inside_an_id_list_is_not_the_first_id(tmp_path: Path) -> None:
    fmt = BY_NAME["pubmedqa_ids"]
    _write(fmt, tmp_path, b"\xef\xbb\xbf11\n22\n")
    assert [r["id"] for r in _read(fmt, tmp_path)] == ["11", "22"]


# --------------------------------------------------------------------------- not a file (issue 20)


def _replace_by(path: Path, what: str) -> str:
    """Put a directory or a dangling symbolic link where the file was; the words the error must use."""
    path.unlink()
    if what == "directory":
        path.mkdir()
        return "got a directory"
    path.symlink_to(path.parent / "gone.tsv")
    return f"got a broken symbolic link to {path.parent / 'gone.tsv'} (its target does not exist)"


@pytest.mark.parametrize("fmt", FORMATS, ids=[f.name for f in FORMATS])
@pytest.mark.parametrize("what", ["directory", "broken_link"])
def test_a_directory_or_broken_link_is_said_to_be_one_not_missing_data(tmp_path: Path, fmt: Fmt, what: str) -> None:
    path = _write(fmt, tmp_path, _bytes(fmt.lines))
    expected = _replace_by(path, what)
    with pytest.raises(NotAFileError) as info:
        _read(fmt, tmp_path)
    assert str(info.value) == f"{path}: expected a file, {expected}"
    assert not isinstance(info.value, DataMissingError) and "how to get it" not in str(info.value)


def _pico_root(root: Path) -> Path:
    pico = BY_NAME["conll_pico"]
    for split in ("dev", "test"):
        _write(pico, root, _bytes(pico.lines)).rename(root / "blurb" / "ebmnlp" / f"{split}.tsv")
    return root / "blurb" / "ebmnlp" / "train.tsv"


def test_the_known_absent_pico_train_split_does_not_hide_a_broken_link(tmp_path: Path) -> None:
    train = _pico_root(tmp_path)
    assert loaders.required_splits("EBM-PICO", tmp_path) == ["dev", "test"]  # truly absent: documented
    assert check.check_split(registry.get("EBM-PICO"), "train", tmp_path).status == "absent"
    train.symlink_to(tmp_path / "nowhere" / "train.tsv")
    assert loaders.required_splits("EBM-PICO", tmp_path) == ["train", "dev", "test"]
    with pytest.raises(NotAFileError, match="a broken symbolic link to"):
        loaders.load_blurb("EBM-PICO", tmp_path)
    row = check.check_split(registry.get("EBM-PICO"), "train", tmp_path)
    assert row.status == "error" and not row.ok and "broken symbolic link" in row.note


# --------------------------------------------------------------------------- split disjointness

# dataset -> (train lines, test lines, shared unit, its line in train, its line in test)
OVERLAPS: dict[str, tuple[list[str], list[str], str, int, int]] = {
    "ChemProt": (["10.T1.T2\ta .\tfalse", "11.T1.T2\tb .\tfalse"], ["12.T1.T2\tc .\tfalse", "11.T3.T4\td .\tfalse"],
                 "11", 2, 2),
    "DDI": (["DDI-MedLine.d1.s0.p0\ta .\tDDI-false"], ["DDI-MedLine.d2.s0.p0\tb .\tDDI-false",
                                                      "DDI-MedLine.d1.s3.p1\tc .\tDDI-false"], "DDI-MedLine.d1", 1, 2),
    "BIOSSES": (["pair_id\tsent1\tsent2\tscore", "1\ta .\tb .\t1.0", "2\tc .\td .\t2.0"],
                ["pair_id\tsent1\tsent2\tscore", "2\te .\tf .\t3.0"], "2", 3, 2),
    "HoC": (["labels\tsentence\tindex", _hoc(set(), "a .", "5_s0")],
            ["labels\tsentence\tindex", _hoc(set(), "b .", "6_s0"), _hoc(set(), "c .", "5_s1")], "5", 2, 3),
    "BioASQ": (["q1\tQ?\tC.\tyes"], ["q9\tQ?\tC.\tno", "q1\tQ?\tC.\tyes"], "q1", 1, 2),
    "PubMedQA": (["11", "22"], ["33", "22"], "22", 2, 2),
    "JNLPBA": (["-DOCSTART- (5)", "", "a\tB", "", "-DOCSTART- (6)", "", "b\tO"],
               ["-DOCSTART- (7)", "", "c\tO", "", "-DOCSTART- (6)", "", "d\tB"], "6", 7, 7),
    "EBM-PICO": (["-DOCSTART- (5)", "", "a\tO"], ["-DOCSTART- (5)", "", "b\tI-PAR"], "5", 3, 3),
}


def _split_root(root: Path, name: str, train: list[str], test: list[str]) -> tuple[str, str]:
    spec = registry.get(name)
    first = "dev" if name == "EBM-PICO" else "train"  # EBM-PICO has no train split in BLURB's data root
    if name == "PubMedQA":
        _write(BY_NAME["pubmedqa_json"], root, _bytes(PUBMEDQA_JSON))
    for split, lines in ((first, train), ("test", test)):
        path = loaders.split_files(spec.name, split, root)[-1]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(_bytes(lines))
    return first, "test"


@pytest.mark.parametrize("name", list(OVERLAPS))
def test_shared_examples_between_splits_are_refused(tmp_path: Path, name: str) -> None:
    train, test, unit, train_line, test_line = OVERLAPS[name]
    first, second = _split_root(tmp_path, name, train, test)
    files = [loaders.split_files(name, s, tmp_path)[-1] for s in (first, second)]
    with pytest.raises(InputFormatError) as info:
        loaders.load_blurb(name, tmp_path, splits=[first, second])
    err = info.value
    assert (err.path, err.line) == (files[1], test_line)
    assert repr(unit) in str(err) and f"{files[0]}:{train_line}" in str(err)
    assert registry.get(name).split_unit.what in str(err)
    with pytest.raises(InputFormatError):
        loaders.validate_splits(name, tmp_path)
    rows = {r.split: r for r in check.check_dataset(registry.get(name), tmp_path)}
    assert rows[second].status == "error" and not rows[second].ok and repr(unit) in rows[second].note


def test_datasets_without_named_ids_have_no_split_unit() -> None:
    """Positional ids (sentence numbers, GAD row numbers) say nothing about overlap; every other dataset is checked."""
    assert {s.name for s in registry.DATASETS if s.split_unit is None} == {
        "BC5-chem", "BC5-disease", "NCBI-disease", "BC2GM", "GAD"}
    assert set(OVERLAPS) == {s.name for s in registry.DATASETS if s.split_unit is not None}


def test_documented_jnlpba_overlap_is_a_note_not_an_error(tmp_path: Path) -> None:
    doc = "98230439"  # one of the 10 abstracts in both JNLPBA train and test (loaders.KNOWN_SPLIT_OVERLAPS)
    train = [f"-DOCSTART- ({doc})", "", "a\tB"]
    _split_root(tmp_path, "JNLPBA", train, [f"-DOCSTART- ({doc})", "", "b\tB", "", "-DOCSTART- (1)", "", "c\tO"])
    known = loaders.validate_splits("JNLPBA", tmp_path, ["train", "test"])
    assert [(o.splits, list(o.shared), bool(o.known)) for o in known] == [(("train", "test"), [doc], True)]
    assert list(loaders.load_blurb("JNLPBA", tmp_path, splits=["train", "test"])) == ["train", "test"]
    _split_root(tmp_path, "JNLPBA", train + ["", "-DOCSTART- (1)", "", "d\tO"],
                [f"-DOCSTART- ({doc})", "", "b\tB", "", "-DOCSTART- (1)", "", "c\tO"])
    with pytest.raises(InputFormatError, match="'1'"):
        loaders.validate_splits("JNLPBA", tmp_path, ["train", "test"])


def test_real_data_splits_are_disjoint_except_the_documented_overlaps(data_root: Path) -> None:
    """BLURB's official files: the 10 JNLPBA abstracts by id, and by content exactly the documented sets."""
    by_unit, by_content = {}, {}
    for spec in registry.DATASETS:
        for found in loaders.validate_splits(spec.name, data_root):
            assert found.known, found.describe()
            if isinstance(found, ContentOverlap):
                by_content[(spec.name, *found.splits)] = (len(found.shared), found.digest)
            else:
                by_unit[(spec.name, *found.splits)] = set(found.shared)
    assert by_unit == {key: set(units) for key, (units, _) in loaders.KNOWN_SPLIT_OVERLAPS.items()}
    assert by_content == KNOWN_CONTENT_OVERLAPS


# GAD: ids are row numbers, so only the content can tell that a test sentence is a training sentence
GAD_TRAIN = ["index\tsentence\tlabel", "0\t@GENE$ causes @DISEASE$ .\t1", "1\t@GENE$ and @DISEASE$ .\t0",
             "2\tWe saw @GENE$ in @DISEASE$ .\t1"]
GAD_DEV = ["index\tsentence\tlabel", "0\t@GENE$ near @DISEASE$ .\t1"]


def _gad_root(root: Path, test: list[str]) -> Path:
    for split, lines in (("train", GAD_TRAIN), ("dev", GAD_DEV), ("test", test)):
        path = root / "blurb" / "GAD" / f"{split}.tsv"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(_bytes(lines))
    return root / "blurb" / "GAD"


@pytest.mark.parametrize("copied", ["2\tWe saw @GENE$ in @DISEASE$ .\t1",  # the same line, renumbered
                                    "7\t  we SAW @gene$   in @disease$ .\t0"])  # case, spacing, label differ
def test_an_example_repeated_under_another_id_is_refused_naming_both_lines(tmp_path: Path, copied: str) -> None:
    folder = _gad_root(tmp_path, ["index\tsentence\tlabel", "0\tOther @GENE$ with @DISEASE$ .\t0", copied])
    with pytest.raises(InputFormatError) as info:
        loaders.load_blurb("GAD", tmp_path)
    message = str(info.value)
    assert (info.value.path, info.value.line) == (folder / "test.tsv", 3)
    assert f"{folder / 'test.tsv'}:3: expected no example of the train split again (same normalised text); " \
           f"this one is also at {folder / 'train.tsv'}:4" in message
    assert "--allow-overlap" in message
    with pytest.raises(InputFormatError, match="train.tsv:4"):
        loaders.validate_dataset("GAD", tmp_path)
    rows = {r.split: r for r in check.check_dataset(registry.get("GAD"), tmp_path)}
    assert rows["test"].status == "error" and "test.tsv:3" in rows["test"].note and rows["train"].status != "error"

    data, found = loaders.load_blurb_checked("GAD", tmp_path, allow_overlap=True)  # the user means it
    assert list(data) == ["train", "dev", "test"] and len(data["test"]) == 2
    [overlap] = found
    assert not overlap.known and overlap.splits == ("train", "test") and overlap.examples == 1
    assert overlap.describe() == "1 test example(s) repeat 1 train example(s) by content (test.tsv:3 = train.tsv:4)"


def test_disjoint_content_loads_and_a_documented_content_overlap_is_a_note(tmp_path: Path, monkeypatch) -> None:
    _gad_root(tmp_path, ["index\tsentence\tlabel", "0\tOther @GENE$ with @DISEASE$ .\t0"])
    assert loaders.validate_splits("GAD", tmp_path) == []
    _gad_root(tmp_path, ["index\tsentence\tlabel", "5\t@GENE$ near @DISEASE$ .\t1"])  # dev's sentence
    with pytest.raises(InputFormatError, match="dev split"):
        loaders.validate_splits("GAD", tmp_path)
    shared = {"@gene$ near @disease$ ."}
    monkeypatch.setitem(KNOWN_CONTENT_OVERLAPS, ("GAD", "dev", "test"), (1, content_digest(shared)))
    [found] = loaders.validate_splits("GAD", tmp_path)
    assert found.known and set(found.shared) == shared
    row = {r.split: r for r in check.check_dataset(registry.get("GAD"), tmp_path)}["test"]
    assert "known: 1 test example(s) repeat 1 dev example(s) by content" in row.note


# --------------------------------------------------------------------------- data check and training


def _data_app():
    import typer

    app = typer.Typer()

    @app.callback()
    def _root() -> None:
        """Test root."""

    data_cli.register(app)
    return app


@pytest.mark.parametrize("kind", [invalid_utf8, gzipped, inner_bom, empty_file], ids=lambda k: k.__name__)
def test_data_check_reports_a_bad_file_as_one_row_and_prints_the_table(tmp_path: Path, kind: Kind) -> None:
    bioasq, gad = BY_NAME["bioasq_tsv"], BY_NAME["gad_tsv"]
    for split in loaders.SPLITS:
        ids_of_split = [line.replace("q", f"{split}-q", 1).replace("\tIs ", f"\t{split}: Is ")
                        for line in bioasq.lines]  # disjoint splits, by id and by content
        (tmp_path / "blurb" / "BioASQ").mkdir(parents=True, exist_ok=True)
        (tmp_path / "blurb" / "BioASQ" / f"{split}.tsv").write_bytes(_bytes(ids_of_split))
        (tmp_path / "blurb" / "GAD").mkdir(parents=True, exist_ok=True)
        (tmp_path / "blurb" / "GAD" / f"{split}.tsv").write_bytes(
            _bytes([line.replace("\t@GENE$", f"\t{split} @GENE$") for line in gad.lines]))
    bad = kind(bioasq)
    (tmp_path / "blurb" / "BioASQ" / "dev.tsv").write_bytes(bad.content)
    args = ["data", "check", "--data-root", str(tmp_path), "--only", "BioASQ,GAD"]
    result = CliRunner().invoke(_data_app(), [*args, "--json"])
    assert result.exit_code == 1
    rows = {(r["dataset"], r["split"]): r for r in json.loads(result.output)}
    assert len(rows) == 6
    assert [key for key, r in rows.items() if r["status"] == "error"] == [("BioASQ", "dev")]
    assert f"dev.tsv:{bad.line}: expected" in rows[("BioASQ", "dev")]["note"]
    assert rows[("GAD", "train")]["ours"] == 3 and rows[("BioASQ", "test")]["ours"] == 3
    text = CliRunner().invoke(_data_app(), args)
    assert text.exit_code == 1 and "ERROR" in text.output and "splits OK" in text.output


def test_empty_dev_split_stops_fine_tuning_before_training(tmp_path: Path, settings) -> None:
    """The issue's empty NER dev file: an error naming the file before any model is built or record written."""
    from medibio.finetune import runner

    folder = tmp_path / "data" / "blurb" / "NCBI-disease"
    folder.mkdir(parents=True)
    for split in loaders.SPLITS:
        (folder / f"{split}.tsv").write_bytes(_bytes(BY_NAME["conll_bio"].lines) if split != "dev" else b"")
    with pytest.raises(InputFormatError, match=r"NCBI-disease/dev.tsv:1: expected at least one sentence"):
        runner.run_finetune("NCBI-disease", "tiny-deberta", seeds=1, profile="smoke",
                            settings=settings.replace(results_root=tmp_path / "results", data_root=tmp_path / "data"))
    assert not list((tmp_path / "results").rglob("*.json"))


# --------------------------------------------------------------------------- file text is never formatting


def test_text_from_files_and_paths_prints_as_it_is_never_as_markup_or_emoji(tmp_path: Path, capsys,
                                                                          monkeypatch) -> None:
    """Issue 39 §2: a line number ``:100:`` was printed as an emoji, ``[red]`` vanished, a label ``1[/i]``
    crashed ``data check`` with a MarkupError. The console reads no markup or emoji codes at all."""
    from medibio.core import console
    from tests.support.cli import run_main

    monkeypatch.setattr(console, "PIPE_WIDTH", 1000)  # no folded cells: each note on one line
    root = tmp_path / "data [red] :smile:"
    folder = root / "blurb" / "BC5CDR-disease"
    folder.mkdir(parents=True)
    lines = "".join(f"Drug{i}\tB\n\n" for i in range(49)) + "Word\t1[/i]\n"  # line 99: the bad label
    for split in ("train", "dev", "test"):
        (folder / f"{split}.tsv").write_text(lines.replace("Drug", split), encoding="utf-8")
    (folder / "train.tsv").write_text("\n" + lines, encoding="utf-8")  # its bad label on line 100
    code, out, err = run_main(["data", "check", "--data-root", str(root), "--only", "BC5-disease"], capsys)
    assert code == 1 and "Traceback" not in out + err
    assert f"{folder / 'train.tsv'}:100: expected" in out and "'1[/i]'" in out
    assert "😄" not in out and "💯" not in out


def test_styled_cells_still_colour_a_terminal_and_nothing_else() -> None:
    from rich.console import Console

    from medibio.core import console as con

    cell = con.styled("[red]x:100:", "bold red")
    terminal = Console(force_terminal=True, color_system="standard", markup=False, emoji=False)
    with terminal.capture() as shown:
        terminal.print(cell)
    assert "\x1b[" in shown.get() and "[red]x:100:" in con.plain(shown.get())
    assert con.style("hello", io.StringIO(), bold=True) == "hello"  # not a terminal: no ANSI codes
    assert con.plain("\x1b[1m▶ [1/10] intro\x1b[0m") == "▶ [1/10] intro"


def test_progress_lines_written_to_a_log_file_carry_no_ansi_codes(tmp_path: Path, monkeypatch) -> None:
    """Issue 38/39: ``make book``'s log written to a file was full of ``\\x1b[1m▶ [1/10] …``."""
    import typer

    from medibio.core import progress

    log = io.StringIO()
    monkeypatch.setattr(progress, "terminal", lambda: log)
    monkeypatch.setattr(progress, "enabled", lambda: True)
    progress.say(typer.style("▶ [1/10] Introduction", bold=True) + "  (intro)")
    assert log.getvalue().strip() == "▶ [1/10] Introduction  (intro)"


# --------------------------------------------------------------------------- damaged files (issue 39 §5, §6)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from medibio.models import zoo

    return Path(zoo.resolve("tiny-deberta", tmp_path_factory.mktemp("cache")))


def _copy_model(source: Path, dest: Path) -> Path:
    import shutil

    shutil.copytree(source, dest)
    return dest


@pytest.mark.parametrize("keep", [0, 5, 8 + 20, 0.5, -1])
def test_a_truncated_safetensors_file_is_named_before_anything_loads_it(tiny_model: Path, tmp_path: Path,
                                                                        keep: float) -> None:
    from medibio.models import weights, zoo

    folder = _copy_model(tiny_model, tmp_path / "model")
    path = folder / "model.safetensors"
    data = path.read_bytes()
    cut = int(len(data) * keep) if isinstance(keep, float) else (len(data) - 1 if keep == -1 else keep)
    path.write_bytes(data[:cut])
    with pytest.raises(InputFormatError, match=r"model.safetensors: expected a complete safetensors file"):
        weights.check_safetensors(path)
    with pytest.raises(InputFormatError, match=r"model.safetensors"):  # every run fingerprints its model first
        zoo.fingerprint(str(folder))


def test_a_truncated_checkpoint_is_named_before_accelerate_loads_it(tiny_model: Path, tmp_path: Path) -> None:
    from medibio.models import weights

    ckpt = _copy_model(tiny_model, tmp_path / "checkpoints" / "step-0000010")
    (ckpt / "optimizer.bin").write_bytes(b"PK\x03\x04" + b"\0" * 40)  # a torch.save archive cut short
    with pytest.raises(InputFormatError, match=r"optimizer.bin: expected a complete PyTorch archive"):
        weights.check_folder(ckpt)
    path = ckpt / "model.safetensors"
    path.write_bytes(path.read_bytes()[:1000])
    (ckpt / "optimizer.bin").unlink()
    with pytest.raises(InputFormatError, match=r"step-0000010/model.safetensors"):
        weights.check_folder(ckpt)


def test_a_file_or_a_damaged_folder_given_as_model_is_said_to_be_that_not_a_hub_problem(tiny_model: Path,
                                                                                        tmp_path: Path) -> None:
    from medibio.core.errors import ModelUnavailableError
    from medibio.models import zoo

    folder = _copy_model(tiny_model, tmp_path / "model")
    with pytest.raises(NotAFileError, match=r"config.json: expected a model folder .* got a file"):
        zoo.resolve(str(folder / "config.json"))
    config = folder / "config.json"
    config.write_text(config.read_text()[:30])
    with pytest.raises(InputFormatError, match=r"config.json:\d+: expected a model configuration in JSON"):
        zoo.fingerprint(str(folder))
    with pytest.raises(ModelUnavailableError, match="config of the model folder .* could not be read") as info:
        zoo.load_config(str(folder))
    assert "hub" not in str(info.value)


@pytest.mark.parametrize(("line", "says"), [
    ('{"id": "p1", "prediction": 1.0, "prediction": 5.0}', r"key ..prediction.. given twice"),
    ('{"id": "p1", "id": "p2", "prediction": 1.0}', r"key ..id.. given twice"),
    ('{"id": "p1", "prediction": ' + "9" * 400 + "}", "beyond what a 64-bit float holds"),
    ('{"id": "p1", "prediction": 1e999}', "number 1e999 is beyond"),
    ('{"id": "p1", "prediction": ' + "9" * 308 + "e5}", "beyond what a 64-bit float holds"),  # 308 digits, then e5
    ('{"id": "p1", "prediction": 1E+400}', "number 1E.400 is beyond"),
    ('{"id": "p1", "prediction": ' + "9" * 309 + ".5}", "beyond what a 64-bit float holds"),
])
def test_repeated_keys_and_numbers_no_float_holds_are_refused_with_their_line(tmp_path: Path, line: str,
                                                                               says: str) -> None:
    path = tmp_path / "BIOSSES.jsonl"
    path.write_text('{"id": "p0", "prediction": 2.5}\n' + line + "\n")
    with pytest.raises(InputFormatError, match=rf"BIOSSES.jsonl:2: .*{says}"):
        predictions.read_predictions(path, "BIOSSES")


def test_the_one_json_lines_reader_refuses_repeated_keys(tmp_path: Path) -> None:
    from medibio.core.text import json_lines

    path = tmp_path / "x.jsonl"
    path.write_text('{"doc_key": "a", "doc_key": "b"}\n')
    with pytest.raises(InputFormatError, match=r"x.jsonl:1: .*key ..doc_key.. given twice"):
        list(json_lines(path, "a document"))


def test_a_chapter_notebook_that_is_not_json_is_a_failed_chapter_naming_it(tmp_path: Path) -> None:
    from medibio.book import build, chapters

    source = tmp_path / "broken.ipynb"
    source.write_text('{"cells": [')
    (tmp_path / "book").mkdir()
    result = build.execute_chapter(chapters.TocEntry("broken", "Broken", str(source)), tmp_path / "book",
                                   {"profile": "smoke"})
    assert result.failed and f"{source}: expected a Jupyter notebook" in (result.error or "")
    with pytest.raises(InputFormatError, match="expected a Jupyter notebook"):
        build._copy_unexecuted(chapters.TocEntry("broken", "Broken", str(source)), tmp_path / "book")


def test_a_symbolic_link_loop_in_the_data_root_is_one_line_naming_it(tmp_path: Path, capsys) -> None:
    from tests.support.cli import run_main

    folder = tmp_path / "data" / "blurb" / "BIOSSES"
    folder.mkdir(parents=True)
    (folder / "dev.tsv").symlink_to(folder / "dev2.tsv")
    (folder / "dev2.tsv").symlink_to(folder / "dev.tsv")
    for split in ("train", "test"):
        (folder / f"{split}.tsv").write_text("id\tsentence1\tsentence2\tscore\n")
    code, _, err = run_main(["finetune", "--task", "BIOSSES", "--profile", "smoke", "--data-root",
                             str(tmp_path / "data"), "--results-root", str(tmp_path / "results")], capsys)
    assert code == 1 and "Traceback" not in err
    assert err.strip().startswith("error: Too many levels of symbolic links: ") and "dev" in err
    assert "points (through others) back to itself" in err
