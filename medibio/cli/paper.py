"""CLI commands of medibio.paper (registered on the main app by medibio.cli.main): ``medibio audit`` and
``medibio paper-table``."""

from __future__ import annotations

import math
from typing import Annotated

import typer
from rich.table import Table

from medibio.cli import session

JsonOpt = Annotated[bool, typer.Option("--json", help="Print records as JSON instead of a table.")]


def _cell(value: object) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, float):
        if value == int(value) and abs(value) >= 1000:
            return f"{int(value):,}"
        return f"{value:.3f}".rstrip("0").rstrip(".")
    return str(value)


def _json_safe(records: list[dict[str, object]]) -> list[dict[str, object]]:
    """NaN is not JSON: turn it into null."""
    return [{k: None if isinstance(v, float) and math.isnan(v) else v for k, v in r.items()} for r in records]


def audit(
    as_json: JsonOpt = False,
    only_inconsistent: Annotated[
        bool, typer.Option("--only-inconsistent", help="Show only the checks that do not add up.")
    ] = False,
    against_sources: Annotated[
        bool, typer.Option("--sources", help="Check the paper's baseline numbers against their publications "
                                             "and redo its comparisons with the published figures.")
    ] = False,
) -> None:
    """Recompute every derived number of the paper (averages, cross-table repeats, claims in the text).

    Averages are recomputed as the paper's plain mean over datasets, with the official BLURB score (macro
    over groups) beside them; improvements are read both as points and as relative percent. A check is
    consistent within one unit of the last printed decimal. With ``--sources``: the numbers the paper
    quotes for BERT, LinkBERT, DeBERTa, SciDeBERTa and BioLinkBERT against their own publications.
    """
    if against_sources:
        _sources(as_json, only_inconsistent)
        return

    from medibio.core.console import console, styled
    from medibio.paper.audit import run_audit, summary

    frame = run_audit()
    line = summary(frame)
    if only_inconsistent:
        frame = frame[~frame["consistent"]]
    if as_json:
        session.echo_json(_json_safe(frame.to_dict(orient="records")))
        return
    console = console()
    table = Table(title="MediBioDeBERTa paper audit", show_lines=False)
    table.add_column("where", overflow="fold")
    table.add_column("reported", justify="right")
    table.add_column("recomputed", justify="right")
    table.add_column("ok")
    table.add_column("explanation", overflow="fold")
    for row in frame.itertuples():
        mark = styled("ok", "green") if row.consistent else styled("✗", "red")
        table.add_row(row.where, _cell(row.reported), _cell(row.recomputed), mark, row.explanation)
    console.print(table)
    console.print(line)


def _print_frame(title: str, frame, columns: dict[str, str]) -> None:
    from medibio.core.console import console

    table = Table(title=title)
    for header in columns.values():
        table.add_column(header, overflow="fold")
    for row in frame[list(columns)].itertuples(index=False):
        table.add_row(*(_cell(v) for v in row))
    console().print(table)


def _sources(as_json: bool, only_inconsistent: bool) -> None:
    """``medibio audit --sources``: quoted numbers vs publications, groups, claims redone."""
    from medibio.core.console import console
    from medibio.paper import sources

    quotes, groups, claims = sources.compare(), sources.group_comparison(), sources.recheck_claims()
    lines = [sources.comparison_summary(quotes), sources.claims_summary(claims)]
    if only_inconsistent:
        quotes = quotes[quotes["status"] == sources.DIFFERS]
        claims = claims[(claims["verdict"] == sources.FAILS) | claims["changed"]]
    if as_json:
        out = {name: _json_safe(frame.to_dict(orient="records"))
               for name, frame in (("quotes", quotes), ("groups", groups), ("claims", claims))}
        session.echo_json(out)
        return
    _print_frame("The paper's baseline numbers against their publications", quotes,
                 {"table": "table", "model": "model", "quantity": "quantity", "paper_value": "paper",
                  "source_value": "published", "difference": "diff", "status": "status",
                  "locator": "where published"})
    _print_frame("MediBioDeBERTa-IFT per group and overall (recomputed)", groups,
                 {"quantity": "quantity", "ift": "IFT", "biolinkbert_quoted": "BioLinkBERT (Table 7)",
                  "biolinkbert_published": "BioLinkBERT (published)", "best_published": "best published",
                  "best_published_model": "model", "ift_leads": "IFT leads"})
    _print_frame("The paper's comparisons redone with published figures", claims,
                 {"id": "claim", "context": "claim", "printed_verdict": "as printed", "verdict": "with sources",
                  "detail": "numbers"})
    for line in lines:
        console().print(line)


def paper_table(
    number: Annotated[int, typer.Argument(help="Table number, 1-7.", min=1, max=7)],
    tidy: Annotated[
        bool, typer.Option("--tidy", help="One row per value instead of the paper's layout.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Print one of the paper's Tables 1-7 as transcribed (the data the audit works from)."""
    from medibio.core.console import console
    from medibio.paper import tables

    frame = tables.load_table(number) if tidy else tables.paper_layout(number).reset_index()
    if as_json:
        session.echo_json(_json_safe(frame.to_dict(orient="records")))
        return
    table = Table(title=f"Table {number}: {tables.CAPTIONS[number]}")
    for col in frame.columns:
        table.add_column(str(col))
    for row in frame.itertuples(index=False):
        table.add_row(*(_cell(v) for v in row))
    console().print(table)


def register(app: typer.Typer) -> None:
    """Add this area's commands to the main medibio app."""
    app.command("audit")(audit)
    app.command("paper-table")(paper_table)
