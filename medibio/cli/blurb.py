"""CLI commands of medibio.tasks (registered on the main app by medibio.cli.main): ``medibio blurb score|gold``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from medibio.cli import session
from medibio.cli import values as check
from medibio.core import profiles

blurb_app = typer.Typer(
    name="blurb",
    help="Score BLURB predictions (per dataset, per group, BLURB score and the paper's average).",
    no_args_is_help=True,
)



def _splits() -> tuple[str, ...]:
    from medibio.tasks.loaders import SPLITS

    return SPLITS


def _datasets(selection: str) -> object:
    from medibio.tasks import registry

    return registry.resolve(selection)


SplitOpt = Annotated[str, typer.Option("--split", help="Gold split to score against: test, dev or train.",
                                       callback=check.choice(_splits))]
DataRootOpt = Annotated[
    Path | None,
    typer.Option("--data-root", help="Data root holding blurb/ (default: $MEDIBIO_DATA or ../shared/data)."),
]


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _extras(metrics: dict[str, float]) -> str:
    keys = ("precision", "recall", "example_f1", "macro_f1")
    counts = ("n", "gold_entities", "words")
    parts = [f"{k}={metrics[k]:.2f}" for k in keys if k in metrics]
    return ", ".join(parts + [f"{k}={int(metrics[k])}" for k in counts if k in metrics])


@blurb_app.command("score")
def score(
    pred_dir: Annotated[Path, typer.Argument(help="Folder with <dataset>.jsonl files of {id, prediction} lines.",
                                             exists=True, file_okay=False)],
    split: SplitOpt = "test",
    data_root: DataRootOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Score a folder of prediction files: per-dataset metrics, group averages, both aggregates.

    Datasets without a file are listed as missing; aggregates say what they cover. A folder without a
    file for any dataset is an error (exit code 2).
    """
    from medibio.core.console import console
    from medibio.tasks import registry
    from medibio.tasks.predictions import score_directory

    report = score_directory(pred_dir, data_root=session.settings(data_root).data_root, split=split)
    if as_json:
        session.echo_json(report.to_dict())
        return
    console = console()
    table = Table(title=f"BLURB scores of {pred_dir} ({split})")
    for col in ("group", "dataset", "metric", "score", "details"):
        table.add_column(col, justify="right" if col == "score" else "left")
    for spec in registry.DATASETS:
        m = report.metrics.get(spec.name)
        table.add_row(spec.group.value, spec.name, spec.metric, _fmt(m["score"]) if m else "missing",
                      _extras(m) if m else "")
    console.print(table)
    groups = Table(title="Group averages")
    groups.add_column("group")
    groups.add_column("average", justify="right")
    groups.add_column("datasets scored", justify="right")
    for g, (avg, k, n) in report.partial_groups.items():
        groups.add_row(g, _fmt(avg) + ("" if k == n else " (partial)"), f"{k}/{n}")
    console.print(groups)
    console.print(f"BLURB score (macro over groups): {report.blurb_score.describe()}")
    console.print(f"Paper 'BLURB Avg.' (mean over datasets): {report.paper_average.describe()}")
    if report.missing:
        console.print(f"missing prediction files: {', '.join(report.missing)}")
    if report.unrecognised:
        console.print(f"ignored files (no such dataset): {', '.join(p.name for p in report.unrecognised)}")


@blurb_app.command("gold")
def gold(
    out_dir: Annotated[Path, typer.Argument(help="Folder to write <dataset>.jsonl gold files into.")],
    split: SplitOpt = "test",
    data_root: DataRootOpt = None,
    datasets: Annotated[str, typer.Option("--datasets", help="all, a group (NER) or a comma list.",
                                          callback=check.lookup(_datasets))] = "all",
) -> None:
    """Write the gold labels in the prediction format (scoring them must give 100 everywhere)."""
    from medibio.tasks.predictions import write_gold

    written, skipped = write_gold(out_dir, split=split, data_root=session.settings(data_root).data_root,
                                  datasets=datasets)
    for path in written:
        typer.echo(f"wrote {path}")
    if skipped:
        typer.echo(f"skipped (no {split} split in the data root): {', '.join(skipped)}")


def _frozen_tasks(selection: str) -> object:
    from medibio.baselines import frozen

    return frozen.task_names(selection)


@blurb_app.command("frozen")
def frozen_cmd(
    profile: Annotated[str, typer.Option("--profile", "-p", help=f"{profiles.help_text()}. Gives the model, "
                                         "caps and test sets", callback=check.lookup(profiles.get))] = profiles.DEFAULT_PROFILE,
    task: Annotated[str, typer.Option("--task", "-t", help="BLURB dataset, group, comma list or 'all', and/or "
                                      "the similarity sets STS-B, SICK-R (default: all of them)",
                                      callback=check.lookup(_frozen_tasks))] = "all",
    model: Annotated[str | None, typer.Option("--model", "-m", help="encoder (default: the profile's)",
                                              callback=check.name("model name or folder"))] = None,
    results_root: Annotated[Path | None, typer.Option("--results-root",
                                                      help="default $MEDIBIO_RESULTS or results/")] = None,
    data_root: DataRootOpt = None,
    force: Annotated[bool, typer.Option("--force", help="recompute even when a record exists")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the rows as JSON.")] = False,
) -> None:
    """Frozen-encoder baselines: cosine (BIOSSES, STS-B, SICK-R), logistic-regression probes (RE, HoC, QA,
    NER) on the profile's capped training subsets, scored on its test sets with a 95 % bootstrap interval.

    Records (kind ``frozen``) are reused when their configuration digest matches.
    """
    from medibio.baselines import frozen
    from medibio.core.console import console

    frame = frozen.baselines(profile, task, model=model, force=force,
                             settings=session.settings(data_root, results_root))
    if as_json:
        typer.echo(frame.to_json(orient="records", indent=2))
        return
    table = Table(title=f"Frozen-encoder baselines ({profile} profile)")
    for col in ("dataset", "metric", "method", "frozen [95% CI]", "train", "test", "seconds", "record"):
        table.add_column(col, justify="right" if col in ("train", "test", "seconds") else "left")
    for row in frame.to_dict("records"):
        table.add_row(row["dataset"], row["metric"], row["method"],
                      frozen.interval_text(row) if row["status"] == "ok" else row["status"],
                      _count(row["train_examples"]), _count(row["test_examples"]), _count(row["seconds"]),
                      f"{row['digest']}{' (reused)' if row['reused'] else ''}")
    console().print(table)


def _count(value: object) -> str:
    return "-" if value is None or value != value else f"{value:.0f}"


def register(app: typer.Typer) -> None:
    """Add this area's commands to the main medibio app."""
    app.add_typer(blurb_app, name="blurb")
