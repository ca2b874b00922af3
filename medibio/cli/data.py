"""``medibio data check|fetch``: validate the BLURB data root against the paper, download public sources."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from medibio.cli import session
from medibio.cli import values as cli_values

data_app = typer.Typer(help="BLURB data: check files and counts against the BLURB paper, fetch public sources.",
                       no_args_is_help=True)



def _datasets(selection: str) -> object:
    from medibio.tasks import registry

    return registry.resolve(selection)


def _sources(selection: str) -> object:
    from medibio.tasks import fetch as fetching

    return fetching.resolve_sources(selection)


_STATUS_STYLE = {"match": ("match", "green"), "absent": ("absent", "yellow"), "error": ("ERROR", "bold red"),
                 "known": ("≠ known", "yellow"), "mismatch": ("≠ MISMATCH", "bold red")}


@data_app.command("check")
def check(
    data_root: Annotated[Path | None, typer.Option("--data-root", help="Data root (default: $MEDIBIO_DATA "
                                                      "or ../shared/data).")] = None,
    only: Annotated[str | None, typer.Option("--only", help="Datasets: 'all', a group or a comma list.",
                                             callback=cli_values.lookup(_datasets))] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the rows as JSON instead of a table.")] = False,
) -> None:
    """Parse every BLURB file and compare counts per split with the BLURB paper.

    Exit code 0 when every split matches or deviates in a documented way (e.g. BC5-disease dev, EBM PICO
    dev, the absent EBM PICO train split, the 10 JNLPBA abstracts in both train and test); 1 when a file
    is malformed (the row names file and line), unexpectedly missing, shares examples with another split,
    or a count differs without explanation. Each dataset is checked on its own: the table always prints.
    """
    from medibio.tasks import registry
    from medibio.tasks.datacheck import check_all

    names = [s.name for s in registry.resolve(only)] if only else None
    rows = check_all(session.settings(data_root).data_root, names)
    if as_json:
        session.echo_json([r.to_dict() for r in rows])
    else:
        _print_table(rows)
    failed = [r for r in rows if not r.ok]
    if failed:
        if not as_json:
            typer.secho(f"{len(failed)} split(s) need attention", err=True, fg=typer.colors.RED)
        raise typer.Exit(1)


def _print_table(rows: list) -> None:
    from medibio.core.console import console, styled

    table = Table(title="BLURB data vs the BLURB paper (NER: mentions, PICO: PICO words, else instances)")
    for col, justify in (("dataset", "left"), ("group", "left"), ("split", "left"), ("ours", "right"),
                         ("paper", "right"), ("diff", "right"), ("status", "left"), ("note", "left")):
        table.add_column(col, justify=justify, overflow="fold")
    for r in rows:
        kind = ("known" if r.known else "mismatch") if r.status == "mismatch" else r.status
        status = styled(*_STATUS_STYLE.get(kind, (r.status, "")))
        diff = "" if r.ours is None or r.ours == r.paper else f"{r.ours - r.paper:+d}"
        ours = "—" if r.ours is None else str(r.ours)
        table.add_row(r.dataset, r.group, r.split, ours, str(r.paper), diff, status, r.note)
    console().print(table)
    n_ok = sum(r.ok for r in rows)
    console().print(f"{n_ok}/{len(rows)} splits OK (matching or a documented deviation)")


@data_app.command("fetch")
def fetch(
    root: Annotated[Path | None, typer.Option("--root", help="Data root to fill (default: $MEDIBIO_DATA "
                                                 "or ../shared/data).")] = None,
    only: Annotated[str | None, typer.Option("--only", help="Comma list of source names (see --list).",
                                             callback=cli_values.lookup(_sources))] = None,
    from_archive: Annotated[Path | None, typer.Option(
        "--from-archive", help="Use this local file instead of downloading (needs exactly one --only source)."
    )] = None,
    force: Annotated[bool, typer.Option("--force", help="Download and unpack again even if done.")] = False,
    list_sources: Annotated[bool, typer.Option("--list", help="List the sources and exit.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print results (or --list) as JSON.")] = False,
) -> None:
    """Download public data sources into the data root, verify sha256 and unpack them.

    Sources without a pinned checksum are accepted but reported as UNVERIFIED with their computed sha256;
    a pinned checksum that does not match rejects the file. Needs internet (or --from-archive).
    """
    from medibio.tasks import fetch as fetching

    sources = fetching.resolve_sources(only)
    if list_sources:
        _list_sources(sources, as_json)
        return
    if from_archive is not None and len(sources) != 1:
        raise typer.BadParameter("--from-archive needs exactly one source in --only", param_hint="--from-archive")
    target = session.settings(root).data_root
    results = [fetching.fetch(s, target, from_archive=from_archive, force=force, show_progress=not as_json)
               for s in sources]
    if as_json:
        session.echo_json([r.__dict__ for r in results])
        return
    for r in results:
        mark = "verified" if r.verified else "UNVERIFIED"
        typer.echo(f"{r.name}: {r.status}, {len(r.files)} file(s), sha256 {r.sha256} ({mark})")
        if r.message and not r.verified:
            typer.secho(f"  warning: {r.message}", fg=typer.colors.YELLOW)
        for note in [s.note for s in sources if s.name == r.name and s.note]:
            typer.echo(f"  note: {note}")


def _list_sources(sources: list, as_json: bool) -> None:
    rows = [{"name": s.name, "urls": list(s.urls), "sha256": s.sha256, "kind": s.kind,
             "unpacks_to": [dest for _, dest in s.members], "description": s.description, "note": s.note}
            for s in sources]
    if as_json:
        session.echo_json(rows)
        return

    from medibio.core.console import console, styled

    table = Table(title="medibio data fetch sources")
    for col in ("name", "url", "sha256", "unpacks to", "what"):
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(r["name"], "\n".join(r["urls"]), r["sha256"] or styled("unknown (unverified)", "yellow"),
                      "\n".join(r["unpacks_to"]), r["description"])
    console().print(table)


def register(app: typer.Typer) -> None:
    """Add ``medibio data check|fetch`` to the main medibio app."""
    app.add_typer(data_app, name="data")
