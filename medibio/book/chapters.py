"""The book's table of contents, laid out like the paper: parts, chapters, and what each chapter reproduces.

One list drives everything: the build (what to execute, in which order), ``_toc.yml`` (generated from it by
:func:`toc_yaml`; a test checks the committed file agrees), the first page's index of the paper's figures and
tables (:data:`ARTEFACTS`), and the tests. A page is either a markdown file copied as is or a notebook
executed by papermill. What a chapter runs under a profile is not decided here: a chapter derives it from
``profile`` itself (:mod:`medibio.core.profiles`), so papermill, JupyterLab and ``medibio book`` run the same thing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from medibio.core import capacity
from medibio.core.errors import UnknownNameError
from medibio.core.paths import REPO_ROOT
from medibio.core.settings import Settings

NOTEBOOKS_DIR = REPO_ROOT / "notebooks"
BOOK_DIR = REPO_ROOT / "book"


@dataclass(frozen=True)
class TocEntry:
    """One page of the book: ``slug`` names the page in book/; ``source`` the file in notebooks/;
    ``title`` is the page's first heading (tests check the rendered page shows it)."""

    slug: str
    title: str
    source: str  # file name in notebooks/ (an absolute path is used as is)
    part: str = ""  # the part of the table of contents ("" for the root page)
    artefacts: tuple[str, ...] = ()  # the paper's figures/tables this chapter reproduces
    execute_last: bool = False  # reads what the other chapters recorded (the index page, the claims)

    @property
    def is_notebook(self) -> bool:
        return self.source.endswith(".ipynb")

    @property
    def source_path(self) -> Path:
        return Path(self.source) if Path(self.source).is_absolute() else NOTEBOOKS_DIR / self.source

    def output_name(self) -> str:
        """File name of the executed (or copied) page in book/."""
        return self.slug + Path(self.source).suffix


PARTS: tuple[str, ...] = (
    "The paper's claims",
    "The pretraining corpus",
    "Pretraining",
    "A science model on SciERC",
    "Pretraining configurations",
    "Intermediate fine-tuning",
    "The final comparison",
    "Appendices",
)

CHAPTERS: tuple[TocEntry, ...] = (
    TocEntry("intro", "MediBioDeBERTa, reproduced", "intro.ipynb", execute_last=True),
    # reads the run records the chapters below write, so it runs after them
    TocEntry("what_holds_up", "What holds up", "what_holds_up.ipynb", PARTS[0], execute_last=True),
    TocEntry("figures_2_4_field_correlation", "Field correlation in S2ORC (Figures 2–4)",
             "figures_2_4_field_correlation.ipynb", PARTS[1], ("Figure 2", "Figure 3", "Figure 4")),
    TocEntry("table_3_pretraining", "Pretraining (Table 3)", "table_3_pretraining.ipynb", PARTS[2],
             ("Table 3",)),
    TocEntry("table_4_scierc", "SciERC (Table 4)", "table_4_scierc.ipynb", PARTS[3], ("Table 4",)),
    TocEntry("tables_5_6_pretraining_configurations", "Pretraining configurations on BLURB (Tables 5–6)",
             "tables_5_6_pretraining_configurations.ipynb", PARTS[4], ("Table 5", "Table 6")),
    TocEntry("tables_1_2_intermediate_finetuning", "Intermediate fine-tuning (Tables 1–2)",
             "tables_1_2_intermediate_finetuning.ipynb", PARTS[5], ("Table 1", "Table 2")),
    TocEntry("table_7_blurb_comparison", "The final comparison on BLURB (Table 7)",
             "table_7_blurb_comparison.ipynb", PARTS[6], ("Table 7",)),
    TocEntry("appendix_a_paper_audit", "Appendix A: paper audit", "appendix_a_paper_audit.ipynb", PARTS[7]),
    TocEntry("appendix_b_reproducibility", "Appendix B: reproducibility", "appendix_b_reproducibility.ipynb",
             PARTS[7]),
    TocEntry("glossary", "Glossary", "glossary.md", PARTS[7]),
)

# Every figure and table of the paper, in the paper's order of appearance, with the chapter reproducing it.
ARTEFACTS: tuple[str, ...] = ("Table 1", "Table 2", "Figure 2", "Figure 3", "Figure 4", "Table 3", "Table 4",
                              "Table 5", "Table 6", "Table 7")


def get(slug: str) -> TocEntry:
    """A chapter by slug, or by a unique prefix/substring (``--only audit``)."""
    exact = [c for c in CHAPTERS if c.slug == slug]
    if exact:
        return exact[0]
    hits = [c for c in CHAPTERS if slug.lower() in c.slug.lower()]
    if len(hits) != 1:
        extra = f" ({len(hits)} chapters match {slug!r}: give more of the name)" if hits else ""
        raise UnknownNameError("chapter", slug, [c.slug for c in CHAPTERS], extra)
    return hits[0]


def chapter_of(artefact: str) -> TocEntry | None:
    """The chapter that reproduces a figure or table of the paper."""
    return next((c for c in CHAPTERS if artefact in c.artefacts), None)


def execution_order(entries: tuple[TocEntry, ...] = CHAPTERS) -> list[TocEntry]:
    """Chapters in the order they are executed: table-of-contents order, the pages that read the others'
    records and summaries (the index page, the claims) last."""
    return [c for c in entries if not c.execute_last] + [c for c in entries if c.execute_last]


def at_once(settings: Settings, cores: int | None = None) -> int:
    """How many chapters execute side by side (each wave of :func:`execution_order`: the chapters, then those
    that read them). A build from recorded results trains nothing and a chapter's kernel works mostly on one
    core, so one chapter per usable core (``cores``, default :func:`medibio.core.capacity.usable_cores`); a build
    that trains executes one at a time: a chapter's training takes the cores (and the background process the
    second, :mod:`medibio.book.background`)."""
    if settings.recorded is None:
        return 1
    return max(1, cores if cores is not None else capacity.usable_cores())


def toc_yaml() -> str:
    """The ``_toc.yml`` of the book (jupyter-book 1.x): the root page, then one numbered part per entry of
    :data:`PARTS`."""
    lines = ["# Table of contents, generated from medibio/book/chapters.py (`python -m medibio.book.chapters`",
             "# rewrites it; a test checks the two agree). Every entry is a page in book/, written by",
             "# `medibio book` from the sources in notebooks/.",
             "format: jb-book", f"root: book/{CHAPTERS[0].slug}", "parts:"]
    for part in PARTS:
        entries = [c for c in CHAPTERS if c.part == part]
        if not entries:
            continue
        lines += [f"  - caption: \"{part}\"", "    numbered: true", "    chapters:"]
        lines += [f"      - file: book/{c.slug}" for c in entries]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    (REPO_ROOT / "_toc.yml").write_text(toc_yaml(), encoding="utf-8")
    print(f"wrote {REPO_ROOT / '_toc.yml'}")
