"""Exceptions that carry enough context for a user to fix the problem without reading code."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path


class MedibioError(Exception):
    """Base class: every error the CLI turns into a one-line message instead of a traceback."""


class DataMissingError(MedibioError, FileNotFoundError):
    """A data file or folder is absent; the message names it and says where to get it."""

    def __init__(self, path: str | Path, how_to_get: str = "") -> None:
        self.path = Path(path)
        self.how_to_get = how_to_get
        msg = f"missing data: {self.path}"
        if how_to_get:
            msg += f"\n  how to get it: {how_to_get}"
        super().__init__(msg)


class InputFormatError(MedibioError, ValueError):
    """Malformed input: names the file, the 1-based line and what was expected there."""

    def __init__(self, path: str | Path, line: int | None, expected: str, got: str | None = None) -> None:
        self.path = Path(path)
        self.line = line
        self.expected = expected
        self.got = got
        where = f"{self.path}:{line}" if line is not None else f"{self.path}"
        msg = f"{where}: expected {expected}"
        if got is not None:
            shown = got if len(got) <= 120 else got[:117] + "..."
            msg += f", got {shown!r}"
        super().__init__(msg)


class NotAFileError(InputFormatError):
    """Something other than a readable file where a data file belongs (a directory, a broken symbolic link),
    or other than a folder where one belongs: said as what it is, never as missing data with a download hint."""

    def __init__(self, path: str | Path, what: str, expected: str = "a file") -> None:
        super().__init__(path, None, expected, what)
        self.args = (f"{self.path}: expected {expected}, got {what}",)  # whole: a link's target may be long


class ModelUnavailableError(MedibioError, OSError):
    """A model name could not be resolved locally and the Hugging Face hub is unreachable."""


class UnknownNameError(MedibioError, KeyError, ValueError):
    """A name no registry knows (dataset, profile, task, config, experiment); the message lists the known ones.

    It is a ``KeyError`` (a failed lookup) and a ``ValueError`` (a bad argument) so that code written against
    either of the lookups' former exception types keeps working.
    """

    def __init__(self, kind: str, name: object, known: Iterable[str], extra: str = "") -> None:
        self.kind = kind
        self.name = name
        self.known = tuple(known)
        super().__init__(f"unknown {kind} {name!r}; known: {', '.join(self.known)}{extra}")

    def __str__(self) -> str:  # KeyError would print the message in quotes
        return str(self.args[0])

