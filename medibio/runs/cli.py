"""CLI commands of medibio.runs (registered on the main app by medibio.cli): ``medibio results table``."""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path

import typer


class Format(str, Enum):
    text = "text"
    csv = "csv"
    json = "json"


class Split(str, Enum):
    test = "test"
    dev = "dev"


def register(app: typer.Typer) -> None:
    """Add this area's commands to the main medibio app."""
    results = typer.Typer(help="Aggregate fine-tuning run records into result tables.", no_args_is_help=True)

    @results.command("table")
    def table(
        results_root: Path = typer.Option(None, "--results-root", help="Results root (default: $MEDIBIO_RESULTS "
                                          "or results/)."),
        profile: str = typer.Option(None, "--profile", help="Only records of this profile (smoke|cpu|gpu|paper)."),
        model: str = typer.Option(None, "--model", help="Only this model (name, folder or tag)."),
        variant: str = typer.Option(None, "--variant", help="Only this variant (base, ift-STS-B, ...)."),
        dataset: str = typer.Option(None, "--dataset", help="Only this dataset."),
        split: Split = typer.Option(Split.test, "--split", help="Which score to aggregate."),
        fmt: Format = typer.Option(Format.text, "--format", help="Output format."),
        as_json: bool = typer.Option(False, "--json", help="Same as --format json."),
    ) -> None:
        """Mean ± std and 95% interval over seeds per dataset, group averages and both BLURB aggregates.

        Aggregates say which groups/datasets they cover (e.g. "5/6 groups; missing PICO").
        """
        from medibio.paths import results_root as default_root
        from medibio.runs.aggregate import format_text, results_table, to_json_records

        root = default_root(results_root)
        df = results_table(root, profile=profile, model=model, variant=variant, dataset=dataset,
                           split=split.value)
        chosen = Format.json if as_json else fmt
        if chosen is Format.json:
            typer.echo(json.dumps(to_json_records(df), indent=2, ensure_ascii=False))
        elif chosen is Format.csv:
            out = df.copy()
            out["seeds"] = [" ".join(map(str, s)) for s in out["seeds"]]
            typer.echo(out.to_csv(index=False), nl=False)
        else:
            if df.empty:
                typer.echo(f"no run records under {root / 'finetune'}")
                return
            typer.echo(format_text(df))

    app.add_typer(results, name="results")
