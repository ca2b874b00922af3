"""CLI commands of medibio.book (registered on the main app by medibio.cli.main): ``medibio book``."""

from __future__ import annotations

from pathlib import Path

import typer

from medibio.book import chapters
from medibio.cli import session
from medibio.cli import values as check
from medibio.core import profiles


def _chapters(names: list[str]) -> None:
    for name in names:
        chapters.get(name)


def _check_model(model: str, profile: str, settings) -> None:
    """Stop before any chapter when the model cannot be used: one line naming it, the profile, the cause found
    (a folder lacking config.json or weights, a decoder-only model, the hub unreachable ...) and --model."""
    from medibio.core.errors import MedibioError
    from medibio.models import zoo

    try:
        zoo.check_loadable(model, settings.cache_root, settings.results_root)
    except MedibioError as exc:
        cause = " ".join(str(exc).split())
        advice = "" if "--model" in cause else "; pass another with --model PATH (or --model minilm)"
        typer.secho(f"medibio book: model {model!r} (profile {profile}) cannot be used: {cause}{advice}", err=True,
                    fg=typer.colors.RED)
        raise typer.Exit(2) from None


def _announce_estimate(profile: str, settings, chosen, execute: bool, model: str | None):
    """Print how long this build will take here (:mod:`medibio.book.estimate`); the countdown for the
    progress line and the expected seconds of each part (for the build's report), or None where there is no
    estimate."""
    from medibio.book.estimate import estimate
    from medibio.core import progress

    found = estimate(profile, settings, chosen, execute=execute, model=model)
    typer.echo(found if isinstance(found, str) else found.describe())
    return None if isinstance(found, str) else (progress.Countdown(found.stages()), found.parts())


def register(app: typer.Typer) -> None:
    """Add this area's commands to the main medibio app."""

    @app.command("book")
    def book(
        profile: str = typer.Option(profiles.DEFAULT_PROFILE, "--profile", "-p",
                                    help="The profile every chapter runs with; " + profiles.help_text(),
                                    callback=check.lookup(profiles.get)),
        only: list[str] = typer.Option([], "--only", help="Execute only this chapter (slug or unique part of "
                                       "it, e.g. 'audit'); repeatable. Other chapters are kept as they are.",
                                       callback=check.lookup(_chapters)),
        no_execute: bool = typer.Option(False, "--no-execute",
                                        help="Do not run notebooks: render what is already in book/."),
        keep_going: bool = typer.Option(False, "--keep-going",
                                        help="Render the HTML even when a notebook failed (exit code stays 1)."),
        no_html: bool = typer.Option(False, "--no-html", help="Execute the notebooks only; skip jupyter-book."),
        data_root: Path = typer.Option(None, "--data-root", help="Data root (default: $MEDIBIO_DATA or "
                                       "../shared/data)."),
        results_root: Path = typer.Option(None, "--results-root", help="Results root (default: "
                                          "$MEDIBIO_RESULTS or results/)."),
        as_json: bool = typer.Option(False, "--json", help="Print the build report as JSON."),
        limit: int = typer.Option(None, "--limit", help="At most N examples per split (of at most 128 "
                                  "sub-tokens) and N pretraining steps in every run: the profile's whole code path in minutes (results are not "
                                  "the profile's; they go to records of their own).", callback=check.limit()),
        from_recorded: Path = typer.Option(None, "--from", help="Render from recorded results (a results "
                                           "folder such as reference/) without training: they are copied into "
                                           "the results root, which must be another folder; a run they lack is "
                                           "an error naming it.", exists=True, file_okay=False),
        model: str = typer.Option(None, "--model", "-m", help="Build every chapter for this encoder: a local model "
                                  "folder, a medibio.models.zoo name (minilm, tiny-deberta) or a hub id (BERT, "
                                  "RoBERTa or DeBERTa family); default: the profile's. The profile's presets "
                                  "apply unchanged, which the pages say.",
                                  callback=check.name("model name or folder")),
        processes: int = typer.Option(None, "--processes", help="Fine-tune through `accelerate launch` with this "
                                      "many processes (GPUs, or gloo processes on a CPU).",
                                      callback=check.at_least(1)),
    ) -> None:
        """Execute the chapter notebooks with papermill into book/, then build _build/html with jupyter-book.

        A failing notebook is reported with its failing cell; the other notebooks still run. The build
        report is saved to <results_root>/book/<profile>/build.json.
        """
        from medibio.book.build import BookBuildError, build_book, select
        from medibio.core import progress

        settings = session.settings(data_root, results_root, limit, processes)
        if from_recorded is not None:
            settings = settings.replace(recorded=from_recorded.resolve())

        started: list[str] = []

        def start(entry) -> None:
            started.append(entry.slug)
            if not as_json:
                n = sum(c.is_notebook for c in select(only or None))
                left = f"; {countdown.line()}" if countdown is not None else ""
                progress.say(typer.style(f"▶ [{len(started)}/{n}] {entry.title}", bold=True)
                             + f"  ({entry.slug}{left})")

        def show(result) -> None:
            if countdown is not None:
                countdown.finish(result.slug)
            if not as_json and result.slug in started:
                colour = typer.colors.RED if result.failed else typer.colors.GREEN
                progress.say(typer.style(("✗ " if result.failed else "✓ ") + result.describe(), fg=colour))

        if settings.recorded is not None and not no_execute:
            session.require_data_root(settings, f"a build from {settings.recorded}")
        # a build from recorded runs of the profile's model trains nothing and loads no model: no check to wait on
        if not no_execute and (settings.recorded is None or model is not None):
            _check_model(model or profiles.get(profile).model, profile, settings)
        if not as_json:
            source = f"rendered from {settings.recorded}" if settings.recorded else profiles.get(profile).hardware
            built_for = f", model {model}" if model else ""
            typer.echo(f"medibio book: profile {profile}{built_for} ({source}); live progress of every chapter "
                       "follows")
        announced = None if as_json else _announce_estimate(profile, settings, select(only or None),
                                                            not no_execute, model)
        countdown, expected = announced or (None, None)
        try:
            report = build_book(profile, settings, only=only or None, execute=not no_execute,
                                keep_going=keep_going, html=not no_html, on_result=show, on_start=start,
                                extra={"model": model} if model else None,
                                expected=expected)
        except BookBuildError as exc:  # the chapters ran: their times and failures are still worth printing
            if exc.report is None:
                raise
            report = exc.report
        if as_json:
            session.echo_json(report.to_dict())
        else:
            typer.echo("\n" + report.timing_table())
            if countdown is not None:
                took = report.execute_seconds + report.html_seconds + report.run_pages_seconds
                typer.echo(f"this build took {took / 60:.1f} min; estimated before it started: "
                           f"{sum(countdown.estimates.values()) / 60:.1f} min")
            if report.html_dir:
                typer.echo(f"book: {report.html_dir}/index.html")
        if report.html_error:
            typer.secho(f"the HTML build failed: {report.html_error}", err=True, fg=typer.colors.RED)
        if report.failures:
            names = ", ".join(f.slug for f in report.failures)
            typer.secho(f"{len(report.failures)} chapter(s) failed: {names}", err=True, fg=typer.colors.RED)
        if report.failures or report.html_error:
            raise typer.Exit(1)
