"""Whether a weights file is whole, checked before anything loads it.

A truncated ``model.safetensors`` (a copy cut short, a full disk) otherwise surfaces deep inside
transformers or accelerate as ``SafetensorError: Error while deserializing header`` with no file name.
The checks read only what the formats put at a fixed place — the safetensors header (its length, then the
JSON that names every tensor's byte range), a PyTorch zip archive's central directory at its end — so they
cost microseconds and catch a file cut anywhere.
"""

from __future__ import annotations

import json
import struct
import zipfile
from collections.abc import Iterable
from pathlib import Path

from medibio.core.errors import InputFormatError

_HEADER_LIMIT = 100 * 1024 * 1024  # the safetensors format's own bound on the header


def check_safetensors(path: str | Path) -> None:
    """Raise :class:`InputFormatError` unless ``path`` is a complete safetensors file: an 8-byte header
    length, a JSON header, and exactly the bytes the header's tensors cover."""
    path = Path(path)
    size = path.stat().st_size
    expected = "a complete safetensors file (its header's tensors cover exactly the bytes after it)"
    with path.open("rb") as fh:
        head = fh.read(8)
        if len(head) < 8:
            raise InputFormatError(path, None, expected, f"{size} bytes: truncated or empty")
        (length,) = struct.unpack("<Q", head)
        if length > _HEADER_LIMIT or 8 + length > size:
            raise InputFormatError(path, None, expected, f"a header of {length} bytes in a file of {size}: truncated")
        try:
            header = json.loads(fh.read(length))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InputFormatError(path, None, expected, f"a header that is not JSON ({exc})") from None
    if not isinstance(header, dict):
        raise InputFormatError(path, None, expected, "a header that is not a JSON object")
    ends = [entry["data_offsets"][1] for name, entry in header.items()
            if name != "__metadata__" and isinstance(entry, dict) and len(entry.get("data_offsets", ())) == 2]
    data = size - 8 - length
    if max(ends, default=0) != data:
        raise InputFormatError(path, None, expected, f"{data} bytes of tensor data where the header names "
                               f"{max(ends, default=0)}: truncated or damaged")


def check_torch_archive(path: str | Path) -> None:
    """Raise :class:`InputFormatError` unless ``path`` (a ``torch.save`` zip archive) has its central
    directory, which a file cut short loses first."""
    path = Path(path)
    if not zipfile.is_zipfile(path):
        with path.open("rb") as fh:
            magic = fh.read(2)
        if magic in (b"PK", b""):
            raise InputFormatError(path, None, "a complete PyTorch archive (torch.save)", "truncated or damaged")
        return  # a legacy (pickle) torch file: nothing cheap to check


def check_files(paths: Iterable[str | Path]) -> None:
    """Check every ``*.safetensors`` and ``*.bin`` among ``paths`` (a model folder's weights, a checkpoint)."""
    for path in map(Path, paths):
        if path.suffix == ".safetensors":
            check_safetensors(path)
        elif path.suffix == ".bin":
            check_torch_archive(path)


def check_folder(folder: str | Path) -> None:
    """:func:`check_files` on the weight files directly in ``folder`` (a pretraining checkpoint)."""
    check_files(sorted(p for p in Path(folder).iterdir() if p.is_file()))
