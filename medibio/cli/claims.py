"""CLI command of the claims chapter (registered on the main app by medibio.cli.main): ``medibio claims``."""

from __future__ import annotations

from pathlib import Path

import typer

from medibio.cli import session
from medibio.cli import values as check
from medibio.core import profiles

PROFILE = check.lookup(profiles.get)


def claims(
    profile: str = typer.Option(profiles.DEFAULT_PROFILE, "--profile", help=f"Whose runs to judge by ({', '.join(profiles.names())}).",
                                callback=PROFILE),
    results_root: Path = typer.Option(None, "--results-root", help="Results root (default: $MEDIBIO_RESULTS or "
                                      "results/)."),
    data_root: Path = typer.Option(None, "--data-root", help="Data root: gold labels and the S2ORC sample "
                                   "(default: $MEDIBIO_DATA or ../shared/data)."),
    as_json: bool = typer.Option(False, "--json", help="Print one object per claim as JSON."),
) -> None:
    """A verdict for each scientific claim of the paper: its printed evidence and our runs' (the book's
    "What holds up" chapter)."""
    from medibio.book import rules, verdicts
    from medibio.core.console import console

    settings = session.settings(data_root, results_root)
    _require_runs(settings.results_root)
    session.require_data_root(settings, "medibio claims")
    found = verdicts.rows(settings, profile)
    if as_json:
        session.echo_json({"profile": profile, "results_root": str(settings.results_root), "rule": rules.RULE,
                           "claims": [r.to_dict() for r in found]})
        return
    from rich.table import Table

    glance = verdicts.overview(found)
    table = Table(title=f"The paper's claims, judged on the {profile!r} runs under {settings.results_root}")
    for col in ("id", *glance.columns):
        table.add_column(str(col))
    for cid, row in glance.iterrows():
        table.add_row(str(cid), *(str(v) for v in row))
    console().print(table)
    for row in found:
        runs = row.ours.runs or f"would be tested by: {row.ours.needs}"
        console().print(f"{row.id}: paper: {row.paper.test or row.paper.verdict}; ours: {runs}")
    console().print(rules.RULE)


def _require_runs(results_root: Path) -> None:
    """The verdicts judge the runs under ``results_root`` (a claim declared on a recorded profile falls back to
    ``reference/``, and says so): a folder without runs is refused rather than titled over numbers from
    elsewhere."""
    from medibio.core.errors import MedibioError
    from medibio.results.recorded import REFERENCE_ROOT
    from medibio.runs.records import require_root

    try:
        require_root(results_root)
    except MedibioError as exc:
        raise MedibioError(f"{exc}. To judge the recorded runs, give --results-root {REFERENCE_ROOT}") from None


def register(app: typer.Typer) -> None:
    """Add this area's command to the main medibio app."""
    app.command("claims")(claims)
