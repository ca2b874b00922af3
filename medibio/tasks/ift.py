"""Intermediate fine-tuning (IFT) tasks as :class:`~medibio.tasks.spec.TaskSpec` entries, and their readers
(rows in the loaders' schema).

The tasks are those of the MediBioDeBERTa paper's Table 2 (sentence similarity for BIOSSES, SciRepEval
document tasks for HoC and PubMedQA) plus SICK; any BLURB dataset serves as an intermediate task too (the
STILT transfer matrix of Jeong & Hwang), through the same registry and :func:`medibio.tasks.loaders.load_task`.

Only STS-B and SICK are in the data root. ClinicalSTS is distributed under a data use agreement and the
SciRepEval training sets are large downloads; their loaders read the files where a user places them
(``<data_root>/ift/clinicalsts/<year>/``, ``<data_root>/ift/scirepeval/<config>/``) and the error for a
missing file says where to get it.

Ranking tasks are trained as pair classification (query, candidate -> relevant or not). ``metric`` is what
the fine-tuning loop selects on (it scores per-pair predictions); ``paper_metric`` is the ranking metric
the paper reports (MAP / nDCG), computed from pair scores by :mod:`medibio.tasks.ranking`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from medibio.core import paths
from medibio.core.errors import DataMissingError
from medibio.core.text import require_file
from medibio.tasks import ift_formats
from medibio.tasks.spec import Problem, TaskSpec

SPLITS = ("train", "dev", "test")


def _ift(name: str, problem: Problem, labels: tuple[str, ...], metric: str, max_length: int, text_pair: bool,
         **fields: Any) -> TaskSpec:
    return TaskSpec(name, "ift", problem, labels, metric, max_length, fields.pop("folder"), fields.pop("reader"),
                    text_pair=text_pair, **fields)


_N2C2 = ("distributed under a data use agreement by the n2c2/OHNLP organisers: request it on the n2c2 portal "
         "(https://portal.dbmi.hms.harvard.edu/), then save each split as "
         "<data_root>/ift/clinicalsts/{year}/train.tsv and test.tsv, one pair per line: "
         "sentence1<TAB>sentence2<TAB>score (merge the gold scores into the test file)")


def _scirepeval_source(config: str) -> str:
    return (f"SciRepEval training data, Hugging Face dataset allenai/scirepeval (config {config!r}, "
            "https://huggingface.co/datasets/allenai/scirepeval). On a machine with internet: "
            f"`datasets.load_dataset('allenai/scirepeval', '{config}')[split].to_json(...)` for each split, "
            f"saved as <data_root>/ift/scirepeval/{config}/train.jsonl and val.jsonl (test.jsonl optional)")


# SciRepEval sample_data/mesh_descriptors.txt: the MeSH descriptor classes of the training task.
MESH_DESCRIPTORS = (
    "Brain", "Neoplasms", "Breast Neoplasms", "Liver", "Anti-Bacterial Agents", "Neurons", "Antineoplastic Agents",
    "HIV Infections", "DNA", "Proteins", "Calcium", "Hypertension", "Postoperative Complications",
    "Escherichia coli", "Lung Neoplasms", "Bacterial Proteins", "Aging", "Obesity", "Kidney",
    "Myocardial Infarction", "Diabetes Mellitus, Type 2", "Lung", "Liver Neoplasms", "Mental Disorders", "Asthma",
    "Prostatic Neoplasms", "Skin Neoplasms", "Cardiovascular Diseases", "Carcinoma, Squamous Cell",
    "Adenocarcinoma",
)
# Semantic Scholar fields of study (the 23 classes of SciRepEval's FoS task, in its label-index order).
FIELDS_OF_STUDY = (
    "Agricultural and Food sciences", "Art", "Biology", "Business", "Chemistry", "Computer science", "Economics",
    "Education", "Engineering", "Environmental science", "Geography", "Geology", "History", "Law", "Linguistics",
    "Materials science", "Mathematics", "Medicine", "Philosophy", "Physics", "Political science", "Psychology",
    "Sociology",
)
RELEVANCE = ("0", "1")

_STS = "STS Benchmark (http://ixa2.si.ehu.eus/stswiki), in the data root at ift/stsb"
_SICK = "SICK (Marelli et al. 2014, https://marcobaroni.org/composes/sick.html), in the data root at ift/sick"

TASKS: tuple[TaskSpec, ...] = (
    _ift("STS-B", Problem.REGRESSION, (), "pearson", 128, True, source=_STS,
                paper_sizes=((5750, 5750), (1501, 1501)), format="CLF", paper_target="BIOSSES", folder="stsb",
                reader="stsb", aliases=("STSB", "STS", "stsbenchmark"), value_range=(0.0, 5.0)),
    _ift("SICK-R", Problem.REGRESSION, (), "pearson", 128, True, source=_SICK, folder="sick",
                reader="sick-relatedness", aliases=("SICK", "SICK-relatedness"), value_range=(1.0, 5.0)),
    _ift("SICK-E", Problem.CLASSIFY, ift_formats.SICK_LABELS, "accuracy", 128, True, source=_SICK,
                folder="sick", reader="sick-entailment", aliases=("SICK-entailment",)),
    _ift("ClinicalSTS-2018", Problem.REGRESSION, (), "pearson", 128, True,
         source="ClinicalSTS 2018 (BioCreative/OHNLP task 2), " + _N2C2.format(year="2018"),
                format="CLF", paper_target="BIOSSES", folder="clinicalsts/2018", reader="clinicalsts", value_range=(0.0, 5.0)),
    _ift("ClinicalSTS-2019", Problem.REGRESSION, (), "pearson", 128, True,
         source="ClinicalSTS 2019 (n2c2/OHNLP track 1), " + _N2C2.format(year="2019"),
                format="CLF", paper_target="BIOSSES", folder="clinicalsts/2019", reader="clinicalsts", value_range=(0.0, 5.0)),
    _ift("ClinicalSTS", Problem.REGRESSION, (), "pearson", 128, True,
         source="ClinicalSTS 2018 + 2019, " + _N2C2.format(year="2018|2019"),
                paper_sizes=((2392, 2392), (730, 730)), format="CLF", paper_target="BIOSSES",
                folder="clinicalsts", reader="clinicalsts-both", value_range=(0.0, 5.0)),
    _ift("citation-count", Problem.REGRESSION, (), "kendall_tau", 512, True,
         source=_scirepeval_source("cite_count"), paper_sizes=((175_000, 175_000), (26_000, 26_000)),
                format="RGN", paper_target="HoC", folder="scirepeval/cite_count", reader="scirepeval-regression",
                label_field="log_citations", aliases=("cite_count",)),
    _ift("publication-year", Problem.REGRESSION, (), "kendall_tau", 512, True,
         source=_scirepeval_source("pub_year"), paper_sizes=((198_000, 198_000), (19_000, 19_000)),
                format="RGN", paper_target="HoC", folder="scirepeval/pub_year", reader="scirepeval-regression",
                label_field="scaled_year", aliases=("pub_year",)),
    _ift("mesh-descriptors", Problem.CLASSIFY, MESH_DESCRIPTORS, "macro_f1", 512, True,
         source=_scirepeval_source("mesh_descriptors"),
                paper_sizes=((600_000, 2_069_000), (40_000, 258_000)), format="CLF", paper_target="HoC",
                folder="scirepeval/mesh_descriptors", reader="scirepeval-classify", label_field="descriptor",
                aliases=("mesh_descriptors", "mesh")),
    _ift("fields-of-study", Problem.MULTILABEL, FIELDS_OF_STUDY, "multilabel_macro_f1", 512, True,
         source=_scirepeval_source("fos"), paper_sizes=((500_000, 541_000), (40_000, 67_000)),
                format="CLF", paper_target="HoC", folder="scirepeval/fos", reader="scirepeval-multilabel",
                label_field="labels_text", aliases=("fos",)),
    _ift("citation-prediction", Problem.CLASSIFY, RELEVANCE, "macro_f1", 512, True, negative_label="0",
         source=_scirepeval_source("cite_prediction"),
                paper_sizes=((600_000, 676_000), (50_000, 143_000)), paper_metric="map", format="PRX",
                paper_target="PubMedQA", folder="scirepeval/cite_prediction", reader="scirepeval-triplets",
                aliases=("cite_prediction",)),
    _ift("search", Problem.CLASSIFY, RELEVANCE, "macro_f1", 512, True, negative_label="0",
         source=_scirepeval_source("search"), paper_sizes=((453_000, 453_000), (75_000, 75_000)),
                paper_metric="ndcg", format="SRCH", paper_target="PubMedQA", folder="scirepeval/search",
                reader="scirepeval-ranking"),
    _ift("same-author", Problem.CLASSIFY, RELEVANCE, "macro_f1", 512, True, negative_label="0",
         source=_scirepeval_source("same_author"), paper_sizes=((67_000, 67_000), (8_900, 8_900)),
                paper_metric="map", format="PRX", paper_target="PubMedQA", folder="scirepeval/same_author",
                reader="scirepeval-ranking", aliases=("same_author", "s2and")),
    _ift("high-influence-cite", Problem.CLASSIFY, RELEVANCE, "macro_f1", 512, True, negative_label="0",
         source=_scirepeval_source("high_influence_cite"),
                paper_sizes=((58_000, 58_000), (7_000, 7_000)), paper_metric="map", format="PRX",
                paper_target="PubMedQA", folder="scirepeval/high_influence_cite", reader="scirepeval-ranking",
                aliases=("high_influence_cite", "highly-influential-citation")),
)

def task_dir(spec: TaskSpec, data_root: str | Path | None = None) -> Path:
    """Folder of a task's files: ``<data_root>/ift/<folder>``."""
    return paths.data_root(data_root) / "ift" / spec.folder


def _need(path: Path, spec: TaskSpec) -> Path:
    return require_file(path, spec.source)


def _first_existing(folder: Path, stems: tuple[str, ...], suffixes: tuple[str, ...]) -> Path | None:
    for stem in stems:
        for suffix in suffixes:
            if (folder / f"{stem}{suffix}").is_file():
                return folder / f"{stem}{suffix}"
    return None


def _read_stsb(spec: TaskSpec, folder: Path) -> dict[str, list[dict]]:
    return {s: ift_formats.read_stsb(_need(folder / f"sts-{s}.csv", spec), s) for s in SPLITS}


def _read_sick(spec: TaskSpec, folder: Path) -> dict[str, list[dict]]:
    target = "relatedness" if spec.reader == "sick-relatedness" else "entailment"
    return ift_formats.read_sick(_need(folder / "SICK.txt", spec), target)


def _read_clinicalsts_year(spec: TaskSpec, folder: Path) -> dict[str, list[dict]]:
    """Train and the official test set; the test set doubles as dev (the paper's Table 2 use)."""
    if not folder.is_dir():
        raise DataMissingError(folder, spec.source)
    year = folder.name
    train = _first_existing(folder, ("train",), (".tsv", ".txt")) or folder / "train.tsv"
    test = _first_existing(folder, ("test",), (".tsv", ".txt")) or folder / "test.tsv"
    out = {"train": ift_formats.read_clinicalsts(_need(train, spec), f"clinicalsts{year}-train"),
           "test": ift_formats.read_clinicalsts(_need(test, spec), f"clinicalsts{year}-test")}
    dev = _first_existing(folder, ("dev",), (".tsv", ".txt"))
    out["dev"] = ift_formats.read_clinicalsts(dev, f"clinicalsts{year}-dev") if dev else out["test"]
    return out


def _read_clinicalsts_both(spec: TaskSpec, folder: Path) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {s: [] for s in SPLITS}
    for year in ("2018", "2019"):
        part = _read_clinicalsts_year(spec, folder / year)
        for split in SPLITS:
            out[split].extend(part[split])
    return out


def _read_scirepeval(spec: TaskSpec, folder: Path) -> dict[str, list[dict]]:
    if not folder.is_dir():
        raise DataMissingError(folder, spec.source)
    files = {"train": _first_existing(folder, ("train",), (".jsonl", ".json")),
             "dev": _first_existing(folder, ("val", "dev", "validation"), (".jsonl", ".json")),
             "test": _first_existing(folder, ("test",), (".jsonl", ".json"))}
    for split in ("train", "dev"):
        if files[split] is None:
            stem = "train" if split == "train" else "val"
            raise DataMissingError(folder / f"{stem}.jsonl", spec.source)
    kind = spec.reader.removeprefix("scirepeval-")
    out = {}
    for split, path in files.items():
        if path is None:
            continue
        if kind == "triplets":
            out[split] = ift_formats.read_scirepeval_triplets(path)
        elif kind == "ranking":
            out[split] = ift_formats.read_scirepeval_ranking(path)
        else:
            out[split] = ift_formats.read_scirepeval_docs(path, spec.label_field, kind, spec.labels)
    return out


_READERS: dict[str, Callable[[TaskSpec, Path], dict[str, list[dict]]]] = {
    "stsb": _read_stsb,
    "sick-relatedness": _read_sick,
    "sick-entailment": _read_sick,
    "clinicalsts": _read_clinicalsts_year,
    "clinicalsts-both": _read_clinicalsts_both,
    "scirepeval-regression": _read_scirepeval,
    "scirepeval-classify": _read_scirepeval,
    "scirepeval-multilabel": _read_scirepeval,
    "scirepeval-triplets": _read_scirepeval,
    "scirepeval-ranking": _read_scirepeval,
}


def files(spec: TaskSpec, data_root: str | Path | None = None) -> list[Path]:
    """The files an intermediate task is read from (its folder, taken whole: the readers pick files by name)."""
    folder = task_dir(spec, data_root)
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.name != "MANIFEST.md") if folder.is_dir() else []


def read_rows(spec: TaskSpec, data_root: str | Path | None = None) -> dict[str, list[dict]]:
    """Plain rows per split of an intermediate task."""
    return _READERS[spec.reader](spec, task_dir(spec, data_root))
