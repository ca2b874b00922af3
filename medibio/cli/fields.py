"""CLI commands of medibio.fields (registered on the main app by medibio.cli.main)."""

from __future__ import annotations

from pathlib import Path

import typer

from medibio.cli import session
from medibio.cli import values as check

fields_app = typer.Typer(
    help="S2ORC fields of study: co-occurrence matrix C (paper Figs. 2-4) and the medicine-related subset.",
    no_args_is_help=True,
)

INPUTS_HELP = "Metadata files or folders of shards (JSONL plain/gzip, or the 2019 TSV)."


def _split(value: str | None) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()] if value else []


def _field_list(value: str) -> list[str]:
    from medibio.fields.fos import resolve

    names = _split(value)
    if not names:
        raise ValueError(f"expected a comma list of fields of study, got {value!r}")
    return [resolve(name) for name in names]


def _orders() -> tuple[str, ...]:
    from medibio.fields.analysis import ORDERS

    return ORDERS


def _texts() -> tuple[str, ...]:
    from medibio.fields.subset import TEXT_CHOICES

    return TEXT_CHOICES


FIELDS = check.lookup(_field_list)
INPUT = {"exists": True}  # metadata files or folders must exist
MEMORY = check.memory_size()
THREADS = check.at_least(1)


@fields_app.command("cooccurrence")
def cooccurrence(
    inputs: list[Path] = typer.Argument(..., help=INPUTS_HELP, **INPUT),
    column: str | None = typer.Option(None, "--column", help="Field-list column (default: auto-detect "
                                      "mag_field_of_study / mag_fos / s2fieldsofstudy)."),
    id_column: str | None = typer.Option(None, "--id-column", help="Paper id column (default: auto-detect)."),
    as_json: bool = typer.Option(False, "--json", help="Print the whole analysis as JSON."),
    plot: Path | None = typer.Option(None, "--plot", help="Write Figures 2-4 (PNG + SVG) into this folder."),
    strict: bool = typer.Option(False, "--strict", help="Fail on the first bad record (file:line)."),
    dedup: bool = typer.Option(True, "--dedup/--no-dedup", help="Count each paper id once."),
    seeds: str = typer.Option("Medicine,Mathematics", "--seeds", help="Seed fields of the groups, in order.",
                              callback=FIELDS),
    k: int = typer.Option(3, "--k", help="Related fields per group (top-k of C[seed, j]).",
                          callback=check.at_least(1)),
    min_share: float = typer.Option(0.0, "--min-share", help="Keep related fields with C[seed, j] above this.",
                                    callback=check.interval(0, 1, high_open=True)),
    order: str = typer.Option("group", "--order", help="Field order of tables/figures: group|count|canonical.",
                              callback=check.choice(_orders)),
    examples: int = typer.Option(5, "--examples", help="Bad-record examples kept per issue category.",
                                 callback=check.at_least(0)),
    all_sources: bool = typer.Option(False, "--all-sources",
                                     help="S2AG lists: keep s2-fos-model categories too (default: MAG only)."),
    memory_limit: str = typer.Option("1GB", "--memory-limit", help="DuckDB memory limit (spills beyond).",
                                     callback=MEMORY),
    threads: int | None = typer.Option(None, "--threads", help="DuckDB threads (default: all cores).",
                                       callback=THREADS),
    out: Path | None = typer.Option(None, "--out", help="Also write the analysis JSON to this file."),
) -> None:
    """Count N_i, N_ij and single-field papers; print C, medicine's closest fields and the groups."""
    from medibio.core.atomic import write_json
    from medibio.fields.analysis import analyse
    from medibio.fields.reader import DEFAULT_SOURCES

    analysis = analyse(
        inputs, column, seeds=_split(seeds), k=k, min_share=min_share, id_column=id_column, dedup=dedup,
        strict=strict, examples=examples, sources=None if all_sources else DEFAULT_SOURCES,
        memory_limit=memory_limit, threads=threads,
    )
    data = analysis.to_dict(order)
    if plot is not None:
        from medibio.fields import plots

        data["figures"] = {k: [str(p) for p in v] for k, v in plots.all_figures(analysis, plot).items()}
    if out is not None:
        write_json(out, data)
    if as_json:
        session.echo_json(data)
        return
    _print_text(analysis, data, order)


def _print_text(analysis: object, data: dict, order: str) -> None:
    from medibio.fields.analysis import FieldAnalysis

    assert isinstance(analysis, FieldAnalysis)
    s = data["summary"]
    typer.echo(f"input: {s['input']}")
    dup = "n/a (--no-dedup)" if s["duplicates"] is None else f"{s['duplicates']:,}"
    typer.echo(f"records {s['records']:,} | counted {s['records_counted']:,} | papers {s['papers']:,} | "
               f"duplicate ids {dup} | no field {s['no_field']:,} | multi-field {s['multi_field']:,}")
    bad = {k: v for k, v in s["issues"].items() if v}
    typer.echo("issues: " + (", ".join(f"{k} {v:,}" for k, v in bad.items()) if bad else "none"))
    for e in s["examples"]:
        typer.echo(f"  {e['file']}:{e['line']}: {e['issue']}: {e['detail']}")
    if s["unknown_names"]:
        typer.echo("unknown names: " + ", ".join(f"{k!r} ({v})" for k, v in list(s["unknown_names"].items())[:10]))
    table = analysis.table.set_index("field").loc[analysis.order(order)]
    table = table.assign(share_of_papers=(table["share_of_papers"] * 100).round(2),
                         c_ii=(table["c_ii"] * 100).round(1))
    typer.echo("\n" + table[["n_i", "single", "share_of_papers", "c_ii", "group"]]
               .rename(columns={"share_of_papers": "% papers", "c_ii": "C_ii %"}).to_string())
    for g in analysis.groups.values():
        near = ", ".join(f"{f} {v * 100:.1f}%" for f, v in analysis.closest(g.seed, 5))
        typer.echo(f"\nclosest to {g.seed} (C[{g.seed}, j]): {near}")
        typer.echo(f"group {g.name}: {', '.join(g.fields)}")
    typer.echo("\nunion shares B (of papers with a field):")
    for row in data["shares"]:
        typer.echo(f"  {row['group']:<12} {row['papers']:>10,}  {row['share'] * 100:6.2f}%  ({row['fields']})")
    if "figures" in data:
        typer.echo("\nfigures: " + ", ".join(p for v in data["figures"].values() for p in v))


@fields_app.command("subset")
def subset(
    inputs: list[Path] = typer.Argument(..., help=INPUTS_HELP, **INPUT),
    out: Path = typer.Option(..., "--out", help="Folder for part-NNNNN.jsonl.gz shards and manifest.json."),
    group: str = typer.Option("medicine", "--group", help="Seed field of the group (its related fields come "
                              "from C on the same inputs).", callback=FIELDS),
    fields: str | None = typer.Option(None, "--fields", help="Explicit comma-separated fields instead of "
                                      "deriving the group.", callback=FIELDS),
    text: str = typer.Option("abstract", "--text", help="Text to keep: abstract|body|both.",
                             callback=check.choice(_texts)),
    text_source: list[Path] | None = typer.Option(None, "--text-source", help="Separate text files "
                                                  "(pdf_parses / S2AG s2orc) joined on the paper id.", **INPUT),
    column: str | None = typer.Option(None, "--column", help="Field-list column (default: auto-detect)."),
    id_column: str | None = typer.Option(None, "--id-column", help="Paper id column (default: auto-detect)."),
    shard_size: int = typer.Option(100_000, "--shard-size", help="Records per shard.", callback=check.at_least(1)),
    memory_limit: str = typer.Option("1GB", "--memory-limit", help="DuckDB memory limit (spills beyond).",
                                     callback=MEMORY),
    threads: int | None = typer.Option(None, "--threads", help="DuckDB threads (default: all cores).",
                                       callback=THREADS),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Write the papers of a field group (ids + text) as deduplicated, resumable pretraining shards."""
    from medibio.fields.subset import write_subset

    report = write_subset(
        inputs, out, group, fields=_split(fields) or None, text=text, column=column, id_column=id_column,
        text_source=text_source or None, shard_size=shard_size, memory_limit=memory_limit, threads=threads,
    )
    if as_json:
        session.echo_json(report.as_dict())
        return
    typer.echo(f"group {report.group}: {', '.join(report.fields)} | text: {report.text}")
    typer.echo(f"selected records {report.selected_records:,} | duplicate ids {report.duplicate_ids:,} | "
               f"without text {report.without_text:,} | duplicate texts {report.duplicate_texts:,}")
    typer.echo(f"wrote {report.written:,} papers in {len(report.shards)} shard(s) "
               f"({report.shards_reused} reused) to {report.out_dir}")


def register(app: typer.Typer) -> None:
    """Add this area's commands to the main medibio app."""
    app.add_typer(fields_app, name="fields")
