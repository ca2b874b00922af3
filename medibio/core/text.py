"""The one text-reading policy of every input file medibio reads, and its JSON-lines and YAML readers.

Data files, intermediate-task files, prediction files, SciERC documents and ``--config`` files all go
through :func:`text_lines`: files are UTF-8; a leading UTF-8 byte-order mark is dropped (Windows editors add
one; it never becomes part of the first id) and one anywhere else is an error (files joined with ``cat``);
CRLF line endings are accepted; blank lines at the end of a file are ignored, blank lines elsewhere are for
the format to judge (:func:`data_lines` refuses them); compressed, UTF-16 or binary files are rejected at the
line where they stop being UTF-8 text, except that a file whose name ends in ``.gz`` is gzip by its name and is
read decompressed (:func:`file_bytes`; recorded predictions are kept so). A file without a single
record is an error, not an empty dataset. Every error names the file, the line and what was expected there.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import stat
import zlib
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from medibio.core.errors import DataMissingError, InputFormatError, NotAFileError

BOM = "\ufeff"
UTF8_TEXT = "a plain UTF-8 text file"

# Leading bytes of files that are not UTF-8 text at all, and what to tell the user.
_NOT_TEXT: tuple[tuple[bytes, str], ...] = (
    (b"\x1f\x8b", "gzip-compressed data (decompress it first, e.g. with gunzip)"),
    (b"PK\x03\x04", "a zip archive (unpack it first)"),
    (b"\xff\xfe", "UTF-16 text (little-endian byte-order mark); save it as UTF-8"),
    (b"\xfe\xff", "UTF-16 text (big-endian byte-order mark); save it as UTF-8"),
)


def _decode(path: Path, data: bytes) -> str:
    """The file's bytes as text; the first byte that is not UTF-8 (or a NUL byte) is reported with its line."""
    for magic, what in _NOT_TEXT:
        if data.startswith(magic):
            raise InputFormatError(path, 1, UTF8_TEXT, what)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        start = data.rfind(b"\n", 0, exc.start) + 1
        column = len(data[start: exc.start].decode("utf-8", errors="replace")) + 1
        raise InputFormatError(path, data.count(b"\n", 0, exc.start) + 1, "UTF-8 text",
                               f"the byte 0x{data[exc.start]:02x} at column {column}, which is not UTF-8 "
                               "(re-save the file as UTF-8)") from None
    nul = text.find("\x00")
    if nul >= 0:
        raise InputFormatError(path, text.count("\n", 0, nul) + 1, "text without NUL bytes",
                               f"a NUL byte at column {nul - text.rfind(chr(10), 0, nul)} (a binary file?)")
    text = text.removeprefix(BOM)
    inner = text.find(BOM)
    if inner >= 0:  # files concatenated with ``cat``: the mark would become part of an id or a token
        line = text.count("\n", 0, inner) + 1
        raise InputFormatError(path, line, "a byte-order mark (U+FEFF) only as the first character of the file",
                               f"one at column {inner - text.rfind(chr(10), 0, inner)} (files concatenated? "
                               "remove it)")
    return text


def present(path: str | Path) -> bool:
    """Whether anything is at ``path``, a broken symbolic link included (absent data is a different mistake
    from a data file that is a directory or a dangling link, and is told differently)."""
    return os.path.lexists(path)


def not_a_file(path: Path) -> str | None:
    """What is at ``path`` when it is not a file a reader can open ("a directory", "a broken symbolic link to
    ..."); None for a file or a link to one, and for nothing at all."""
    if path.is_file() or not present(path):
        return None
    if path.is_symlink() and not path.exists():
        return f"a broken symbolic link to {os.readlink(path)} (its target does not exist)"
    if path.is_dir():
        return "a directory"
    mode = path.stat().st_mode
    kinds = ((stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device"))
    return next((what for test, what in kinds if test(mode)), "not a regular file")


def require_file(path: str | Path, how_to_get: str = "") -> Path:
    """``path`` when it is a file; :class:`DataMissingError` (with ``how_to_get``) when nothing is there,
    :class:`NotAFileError` saying what is there otherwise (a directory, a broken link)."""
    path = Path(path)
    what = not_a_file(path)
    if what is not None:
        raise NotAFileError(path, what)
    if not path.is_file():
        raise DataMissingError(path, how_to_get)
    return path


GZ = ".gz"


def file_bytes(path: str | Path) -> bytes:
    """A file's content: its bytes, decompressed when its name ends in ``.gz`` (a name that promises gzip and
    data that is not is an :class:`InputFormatError`)."""
    path = Path(path)
    data = path.read_bytes()
    if not path.name.endswith(GZ):
        return data
    try:
        return gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as exc:
        raise InputFormatError(path, None, "gzip-compressed data (the name ends in .gz)",
                               f"{type(exc).__name__}: {exc}") from None


def text_lines(path: str | Path, how_to_get: str = "") -> Iterator[tuple[int, str]]:
    """Yield (1-based line number, line without its line ending) of a UTF-8 text file.

    The shared policy of the module docstring: BOM dropped, CRLF accepted, trailing blank lines dropped
    (inner blank lines are yielded for the format to judge), non-UTF-8 bytes / NUL bytes / gzip, zip or
    UTF-16 files raise :class:`InputFormatError` with the line. A missing file names where to get it; a
    directory or a broken link in its place is said to be one (:func:`require_file`).
    """
    yield from enumerate(line_list(path, how_to_get), start=1)


def line_list(path: str | Path, how_to_get: str = "") -> list[str]:
    """The lines :func:`text_lines` yields, without their numbers (line ``k`` at index ``k - 1``), in one
    list: a reader that takes a whole file at once saves a generator step a line."""
    path = require_file(path, how_to_get)
    text = _decode(path, file_bytes(path))
    lines = text.split("\n")
    while lines and not lines[-1].strip():  # the final newline, and blank lines at the end of the file
        lines.pop()
    return [line.removesuffix("\r") for line in lines] if "\r" in text else lines


def data_lines(path: str | Path, what: str, how_to_get: str = "") -> Iterator[tuple[int, str]]:
    """Yield (line number, line) of a file with one record per line, under the :func:`text_lines` policy:
    a blank line inside the file is an error, and so is a file without a single record. ``what`` names a
    record in messages ("id (one per line)", "pair of the STS Benchmark")."""
    path = Path(path)
    last = 0
    records = 0
    for number, line in text_lines(path, how_to_get):
        last = number
        if not line.strip():
            raise blank_line(path, number, what)
        records += 1
        yield number, line
    if not records:
        raise no_examples(path, last, what)


def read_text(path: str | Path, how_to_get: str = "") -> str:
    """The whole file as text under the :func:`text_lines` policy (line numbers are preserved)."""
    return "\n".join(line for _, line in text_lines(path, how_to_get))


def no_examples(path: Path, last: int, what: str) -> InputFormatError:
    """The error for a file without a single example: names the line after the last one read."""
    if last:
        got = "end of file"
    else:
        got = "an empty file" if path.stat().st_size == 0 else "a file of blank lines only"
    for article in ("a ", "an "):  # "at least one JSON object", not "at least one a JSON object"
        what = what.removeprefix(article)
    return InputFormatError(path, last + 1, f"at least one {what}", got)


def blank_line(path: Path, number: int, what: str) -> InputFormatError:
    return InputFormatError(path, number, f"{what}, not a blank line (blank lines may only end the file)", "")


def _finite(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """A number parser for the decoder that refuses a literal no 64-bit float holds."""
    def checked(literal: str) -> Any:
        value = parse(literal)
        try:
            finite = math.isfinite(float(value))
        except OverflowError:
            finite = False
        if not finite:
            shown = literal if len(literal) <= 24 else f"{literal[:12]}...({len(literal)} characters)"
            raise json.JSONDecodeError(f"number {shown} is beyond what a 64-bit float holds", literal, 0)
        return value
    return checked


def _unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):  # json.loads would keep the last value without a word
        seen: set[str] = set()
        twice = next(key for key, _ in pairs if key in seen or seen.add(key))
        raise json.JSONDecodeError(f"key {twice!r} given twice", "", 0)
    return out


# One decoder for every call: its number parsers run only on the numbers a text holds
_DECODER = json.JSONDecoder(object_pairs_hook=_unique_object, parse_int=_finite(int), parse_float=_finite(float))


def strict_json(text: str) -> Any:
    """``json.loads`` for data read from files, refusing what a reader would otherwise take silently or
    choke on later: a key given twice (the last value would win) and a number no 64-bit float holds (a
    400-digit integer, ``1e999``). Raises ``json.JSONDecodeError`` (the callers' error path) saying which."""
    return _DECODER.decode(text)


def json_lines(path: str | Path, what: str, how_to_get: str = "") -> Iterator[tuple[int, str, Any]]:
    """Yield (line number, line, parsed JSON value) of a JSON-lines file under the :func:`data_lines` policy;
    a line that is not JSON names the file, the line and ``what`` was expected there."""
    path = Path(path)
    for number, line in data_lines(path, what, how_to_get):
        try:
            value = strict_json(line)
        except json.JSONDecodeError as exc:
            raise InputFormatError(path, number, what, f"invalid JSON ({exc.msg}): {line.strip()}") from None
        yield number, line, value


Where = tuple[Any, ...]  # a key path in a YAML mapping: ("tasks", "BIOSSES", "epochs")


def read_yaml(path: str | Path) -> tuple[Any, Any]:
    """A YAML/JSON file under this policy: its data and its node tree (for the line of each key); a syntax
    error names the file and line."""
    path = Path(path)
    text = read_text(path)
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        line = getattr(getattr(exc, "problem_mark", None), "line", None)
        raise InputFormatError(path, None if line is None else line + 1, "valid YAML",
                               " ".join(str(getattr(exc, "problem", None) or exc).split())) from exc
    return data, node


def yaml_key_lines(path: Path, node: Any, where: Where = ()) -> dict[Where, int]:
    """1-based line of every mapping key in a YAML node tree; a key given twice is an error (YAML would
    silently keep the last value)."""
    found: dict[Where, int] = {}
    if not isinstance(node, yaml.MappingNode):
        return found
    for key, value in node.value:
        at = (*where, key.value)
        line = key.start_mark.line + 1
        if at in found:
            raise InputFormatError(path, line, f"each key once; {'.'.join(map(str, at))} is already "
                                   f"on line {found[at]}", str(key.value))
        found[at] = line
        found.update(yaml_key_lines(path, value, at))
    return found


def yaml_mapping(path: str | Path, what: str) -> tuple[dict[str, Any], dict[Where, int]]:
    """A YAML/JSON file holding one mapping (``what`` names it in errors) and the line of each key; an
    empty file is an empty mapping."""
    path = Path(path)
    data, node = read_yaml(path)
    if data is None:
        return {}, {}
    if not isinstance(data, Mapping):
        raise InputFormatError(path, 1, f"a mapping of {what}", type(data).__name__)
    return dict(data), yaml_key_lines(path, node)
