"""The book's chapters and the parameters each profile injects into them.

One list drives everything: the build (what to execute, in which order), ``_toc.yml`` (a test checks they
agree) and the tests (which outputs a chapter must produce). A chapter is either a markdown page copied
as is or a notebook executed by papermill.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from medibio.paths import REPO_ROOT

NOTEBOOKS_DIR = REPO_ROOT / "notebooks"
BOOK_DIR = REPO_ROOT / "book"
PROFILES = ("smoke", "cpu", "gpu", "paper")
DEFAULT_PROFILE = "cpu"


@dataclass(frozen=True)
class Chapter:
    """One page of the book: ``slug`` names both the source in notebooks/ and the page in book/;
    ``title`` is the page's first heading (tests check the rendered page shows it)."""

    slug: str
    title: str
    source: str  # file name in notebooks/ (an absolute path is used as is)

    @property
    def is_notebook(self) -> bool:
        return self.source.endswith(".ipynb")

    @property
    def source_path(self) -> Path:
        return Path(self.source) if Path(self.source).is_absolute() else NOTEBOOKS_DIR / self.source

    def output_name(self) -> str:
        """File name of the executed (or copied) page in book/."""
        return self.slug + Path(self.source).suffix


CHAPTERS: tuple[Chapter, ...] = (
    Chapter("intro", "MediBioDeBERTa, reproduced", "intro.md"),
    Chapter("02_paper_audit", "Paper audit", "02_paper_audit.ipynb"),
    Chapter("03_field_correlation", "Field correlation in S2ORC (Figures 2–4)", "03_field_correlation.ipynb"),
    Chapter("04_pretraining", "Pretraining (Table 3)", "04_pretraining.ipynb"),
    Chapter("05_scierc", "SciERC (Table 4)", "05_scierc.ipynb"),
    Chapter("06_pretraining_configurations", "Pretraining configurations on BLURB (Tables 5–6)",
            "06_pretraining_configurations.ipynb"),
    Chapter("07_blurb_and_ift", "BLURB comparison and intermediate fine-tuning (Tables 1, 2 and 7)",
            "07_blurb_and_ift.ipynb"),
    Chapter("08_reproducibility", "Reproducibility appendix", "08_reproducibility.ipynb"),
)


def get(slug: str) -> Chapter:
    """A chapter by slug, or by a unique prefix/substring (``--only audit``)."""
    exact = [c for c in CHAPTERS if c.slug == slug]
    if exact:
        return exact[0]
    hits = [c for c in CHAPTERS if slug.lower() in c.slug.lower()]
    if len(hits) != 1:
        known = ", ".join(c.slug for c in CHAPTERS)
        what = "no chapter" if not hits else f"{len(hits)} chapters"
        raise KeyError(f"{what} match {slug!r}; chapters: {known}")
    return hits[0]


# Parameters injected per profile on top of the notebook defaults. ``models``/``seeds`` None mean "the
# fine-tuning profile's own" (medibio.finetune.presets: tiny random DeBERTa for smoke, MiniLM on cpu, ...).
# ``smoke`` keeps every chapter to seconds; ``cpu`` fits the whole book in about an hour on 2 cores.
PROFILE_PARAMETERS: dict[str, dict[str, Any]] = {
    "smoke": {"models": None, "tasks": ["BIOSSES"], "seeds": None, "ift_tasks": ["STS-B", "SICK"],
              "stilt_tasks": ["BIOSSES", "BioASQ"], "stilt_seeds": [1], "pretrain_config": "smoke",
              "table5_experiments": False},
    "cpu": {"models": None, "tasks": ["all"], "seeds": None, "ift_tasks": ["STS-B", "SICK"],
            "stilt_tasks": ["BIOSSES", "BioASQ"], "stilt_seeds": [1], "pretrain_config": "mini",
            "table5_experiments": False},
    "gpu": {"models": None, "tasks": ["all"], "seeds": None, "ift_tasks": ["STS-B", "SICK"],
            "stilt_tasks": ["BIOSSES", "BioASQ", "PubMedQA", "GAD", "HoC"], "stilt_seeds": [1, 2, 3],
            "pretrain_config": "gpu-mini", "table5_experiments": True},
    "paper": {"models": None, "tasks": ["all"], "seeds": None, "ift_tasks": ["STS-B", "SICK"],
              "stilt_tasks": ["BIOSSES", "BioASQ", "PubMedQA", "GAD", "HoC"], "stilt_seeds": None,
              "pretrain_config": "medibiodeberta", "table5_experiments": True},
}


def parameters_for(profile: str, data_root: str | Path | None, results_root: str | Path | None,
                   **extra: Any) -> dict[str, Any]:
    """The papermill parameters of a chapter for ``profile`` (paths as strings; ``""`` = library default)."""
    if profile not in PROFILE_PARAMETERS:
        raise ValueError(f"unknown profile {profile!r}; expected one of {', '.join(PROFILES)}")
    params: dict[str, Any] = {"profile": profile, "data_root": str(data_root or ""),
                              "results_root": str(results_root or "")}
    params.update(PROFILE_PARAMETERS[profile])
    params.update(extra)
    return params
