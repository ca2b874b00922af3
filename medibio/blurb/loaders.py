"""Load the 13 BLURB datasets from a data root into ``datasets.DatasetDict`` objects.

The data root holds BLURB's data-generation output under ``<root>/blurb/<folder>/{train,dev,test}.tsv``
(PubMedQA: ``ori_pqal.json`` plus split id lists). Columns follow ``spec.problem`` (see the shared
contract in the module functions below); ids are stable strings, the same ids prediction files use.
Nothing is cached: parsing all 13 datasets takes seconds, and a cache would be one more thing to go stale.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from medibio import paths
from medibio.blurb import formats, registry
from medibio.blurb.registry import DatasetSpec, Problem
from medibio.errors import DataMissingError

if TYPE_CHECKING:
    import datasets

SPLITS: tuple[str, ...] = ("train", "dev", "test")

# Splits a data root may legitimately lack (no public copy): loading them on request explains where to get
# them; loading "all splits" leaves them out instead of failing.
OPTIONAL_SPLITS: dict[tuple[str, str], str] = {
    ("EBM-PICO", "train"): (
        "the EBM PICO train split is not part of this data root (no public copy of BLURB's processed train "
        "file was reachable). Get the EBM-NLP corpus from https://github.com/bepnye/EBM-NLP "
        "(ebm_nlp_2_00.tar.gz), run BLURB's data generation on it (https://microsoft.github.io/BLURB/) and "
        "place the result at blurb/ebmnlp/train.tsv"
    ),
}


def blurb_root(data_root: str | Path | None = None) -> Path:
    """The ``blurb/`` folder of the data root (``$MEDIBIO_DATA`` or ``../shared/data`` by default)."""
    return paths.data_root(data_root) / "blurb"


def split_files(name: str, split: str, data_root: str | Path | None = None) -> list[Path]:
    """The files one split is read from (several for PubMedQA: the items and the split's id list)."""
    spec = registry.get(name)
    _check_split(split)
    folder = blurb_root(data_root) / spec.folder
    if spec.input_format == "pubmedqa_json":
        return [folder / "ori_pqal.json", folder / "indexing" / f"{split}_pmid.tsv"]
    return [folder / f"{split}.tsv"]


def available_splits(name: str, data_root: str | Path | None = None) -> list[str]:
    """The splits whose files are all present, in train/dev/test order (EBM-PICO: dev, test)."""
    return [s for s in SPLITS if all(p.is_file() for p in split_files(name, s, data_root))]


def load_split(name: str, split: str, data_root: str | Path | None = None) -> datasets.Dataset:
    """Parse one split into a ``datasets.Dataset`` with the contract's columns and explicit features."""
    import datasets

    spec = registry.get(name)
    rows = read_rows(spec, split, data_root)
    columns = {key: [row[key] for row in rows] for key in features_for(spec)}
    return datasets.Dataset.from_dict(columns, features=features_for(spec), split=split)


def load_blurb(name: str, data_root: str | Path | None = None,
               splits: list[str] | tuple[str, ...] | str | None = None) -> datasets.DatasetDict:
    """Load a BLURB dataset; ``splits=None`` loads every split the dataset has in the data root.

    A split missing from the data root raises :class:`DataMissingError` naming the file and its source,
    except the known-absent EBM-PICO train split, which ``splits=None`` leaves out.
    """
    import datasets

    spec = registry.get(name)
    folder = blurb_root(data_root) / spec.folder
    if not folder.is_dir():
        raise DataMissingError(folder, spec.source)
    if splits is None:
        present = set(available_splits(spec.name, data_root))
        wanted = [s for s in SPLITS if s in present or (spec.name, s) not in OPTIONAL_SPLITS]
    else:
        wanted = [splits] if isinstance(splits, str) else list(splits)
    return datasets.DatasetDict({s: load_split(spec.name, s, data_root) for s in wanted})


def features_for(spec: DatasetSpec) -> datasets.Features:
    """The column types of a dataset: they depend only on how it is modelled (``spec.problem``)."""
    from datasets import Features, List, Value

    text = {"id": Value("string"), "text": Value("string"), "text_pair": Value("string")}
    if spec.problem is Problem.TOKEN:
        return Features({"id": Value("string"), "tokens": List(Value("string")), "tags": List(Value("string"))})
    if spec.problem is Problem.MULTILABEL:
        return Features({**text, "label": List(Value("string"))})
    if spec.problem is Problem.REGRESSION:
        return Features({**text, "label": Value("float64")})
    return Features({**text, "label": Value("string")})


def read_rows(spec: DatasetSpec, split: str, data_root: str | Path | None = None) -> list[dict]:
    """Parse one split into plain rows (the loaders' and the count check's common ground)."""
    files = split_files(spec.name, split, data_root)
    how = OPTIONAL_SPLITS.get((spec.name, split), spec.source)
    for path in files:
        if not path.is_file():
            raise DataMissingError(path, how)
    path = files[0]
    fmt = spec.input_format
    if fmt == "conll":
        return formats.read_conll(path, spec.labels, bio=spec.labels == registry.BIO_TAGS, how_to_get=how)
    if fmt == "re_tsv":
        return formats.read_re_tsv(path, spec.labels, how_to_get=how)
    if fmt == "gad_tsv":
        return formats.read_re_tsv(path, spec.labels, header=("index", "sentence", "label"), how_to_get=how)
    if fmt == "biosses_tsv":
        return formats.read_biosses_tsv(path, how_to_get=how)
    if fmt == "hoc_tsv":
        return formats.read_hoc_tsv(path, spec.labels, how_to_get=how)
    if fmt == "bioasq_tsv":
        return formats.read_bioasq_tsv(path, spec.labels, how_to_get=how)
    if fmt == "pubmedqa_json":
        return formats.read_pubmedqa(files[0], files[1], spec.labels, how_to_get=how)
    raise ValueError(f"no reader for input format {fmt!r} of {spec.name}")


def _check_split(split: str) -> None:
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {', '.join(SPLITS)}")
