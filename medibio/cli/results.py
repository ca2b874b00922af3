"""CLI commands of medibio.runs (registered on the main app by medibio.cli.main): ``medibio results
table|list|record|verify|compare|drift``.

Every name a filter takes (profile, dataset, system, task) is checked against its registry before any record
is read: a typo is one line listing what exists, never an empty table with exit code 0.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path

import typer

from medibio.cli import session
from medibio.cli import values as check
from medibio.core import profiles


class Format(str, Enum):
    text = "text"
    csv = "csv"
    json = "json"


class Split(str, Enum):
    test = "test"
    dev = "dev"


class Method(str, Enum):
    bootstrap = "bootstrap"
    randomization = "randomization"


_RESULTS_ROOT_HELP = "Results root (default: $MEDIBIO_RESULTS or results/)."
_PROFILE_HELP = f"Only records of this profile ({', '.join(profiles.names())})."
_DATASET_HELP = "Only this dataset (a BLURB dataset, an intermediate task or SciERC)."


def _dataset(name: str) -> str:
    """A dataset some kind of run record can have: any task of the registry (BLURB, IFT, SciERC)."""
    from medibio.core.errors import UnknownNameError
    from medibio.tasks import registry

    try:
        return registry.get(name).name
    except UnknownNameError:
        raise UnknownNameError("dataset", name, registry.names(None)) from None


def _system(text: str) -> object:
    """PROFILE/MODEL/VARIANT with a profile that exists."""
    from medibio.results.significance import System

    system = System.parse(text)
    profiles.get(system.profile)
    return system


def _tasks(items: list[str]) -> object:
    from medibio.tasks import registry

    return [registry.resolve(item) for item in items]


PROFILE = check.lookup(profiles.get)
DATASET = check.lookup(_dataset)
SYSTEM = check.lookup(_system)
_DATA_ROOT_HELP = "Data root holding blurb/, for the gold labels (default: $MEDIBIO_DATA or ../shared/data)."


def register(app: typer.Typer) -> None:
    """Add this area's commands to the main medibio app."""
    results = typer.Typer(help="Aggregate fine-tuning run records into result tables.", no_args_is_help=True)

    @results.command("table")
    def table(
        results_root: Path = typer.Option(None, "--results-root", help="Results root (default: $MEDIBIO_RESULTS "
                                          "or results/)."),
        profile: str = typer.Option(None, "--profile", help=_PROFILE_HELP, callback=PROFILE),
        model: str = typer.Option(None, "--model", help="Only this model (name, folder or tag)."),
        variant: str = typer.Option(None, "--variant", help="Only this variant (base, ift-STS-B, ...)."),
        dataset: str = typer.Option(None, "--dataset", help=_DATASET_HELP, callback=DATASET),
        split: Split = typer.Option(Split.test, "--split", help="Which score to aggregate."),
        fmt: Format = typer.Option(Format.text, "--format", help="Output format."),
        as_json: bool = typer.Option(False, "--json", help="Same as --format json."),
        bootstrap: bool = typer.Option(False, "--bootstrap", help="Add a 95% percentile-bootstrap interval "
                                       "over test units (boot_low, boot_high, units) to each dataset row, "
                                       "from the saved test predictions (test split only)."),
        resamples: int = typer.Option(1000, "--resamples", min=1, help="Bootstrap resamples (--bootstrap)."),
        seed: int = typer.Option(0, "--seed", help="Random seed of the resampling (--bootstrap)."),
        data_root: Path = typer.Option(None, "--data-root", help=_DATA_ROOT_HELP),
    ) -> None:
        """Mean ± std and 95% interval over seeds per dataset, group averages and both BLURB aggregates.

        Aggregates say which groups/datasets they cover (e.g. "5/6 groups; missing PICO"). With
        --bootstrap, dataset rows also get an interval over test examples (see `medibio results compare`).
        """
        import pandas as pd

        from medibio.results.aggregate import format_text, results_table, to_json_records
        from medibio.results.significance import SelectionError, add_bootstrap_interval

        if bootstrap and split is not Split.test:
            raise SelectionError("--bootstrap resamples the test predictions: use it with --split test")
        from medibio.core.errors import MedibioError
        from medibio.runs.records import require_root

        settings = session.settings(data_root, results_root)
        root = require_root(settings.results_root)
        df = results_table(root, profile=profile, model=model, variant=variant, dataset=dataset,
                           split=split.value)
        if df.empty:
            chosen = ", ".join(f"{k} {v}" for k, v in (("profile", profile), ("model", model), ("variant", variant),
                                                       ("dataset", dataset)) if v)
            raise MedibioError(f"no fine-tuning run records under {root / 'finetune'}"
                               + (f" for {chosen}" if chosen else "") + " (`medibio results list` shows what is there)")
        if bootstrap and not df.empty:
            df = add_bootstrap_interval(df, root, resamples=resamples, seed=seed, data_root=settings.data_root)
        chosen = Format.json if as_json else fmt
        if chosen is Format.json:
            session.echo_json(to_json_records(df))
        elif chosen is Format.csv:
            out = df.copy()
            out["seeds"] = [" ".join(map(str, s)) for s in out["seeds"]]
            typer.echo(out.to_csv(index=False), nl=False)
        else:
            if "units" in df.columns:
                df["units"] = ["" if pd.isna(u) else str(u) for u in df["units"]]
            typer.echo(format_text(df))

    @results.command("list")
    def list_cmd(
        results_root: Path = typer.Option(None, "--results-root", help=_RESULTS_ROOT_HELP),
        stale: bool = typer.Option(False, "--stale", help="Only records not known to be current: those the "
                                   "current presets, model or data no longer give, legacy records without a "
                                   "configuration digest, and records whose request cannot be planned here "
                                   "(unknown; the reason is shown)."),
        profile: str = typer.Option(None, "--profile", help=_PROFILE_HELP, callback=PROFILE),
        dataset: str = typer.Option(None, "--dataset", help=_DATASET_HELP, callback=DATASET),
        data_root: Path = typer.Option(None, "--data-root", help=_DATA_ROOT_HELP),
        as_json: bool = typer.Option(False, "--json", help="Print the rows as JSON."),
    ) -> None:
        """Every run record with its configuration digest and whether its request would still get it.

        "stale" records name what changed (e.g. `hyperparameters.epochs: 2 → 3`); they are never reused or
        overwritten: the changed request runs into a record of its own. "unknown" records say why their
        request cannot be planned on this machine.
        """
        from medibio.results.listing import list_records

        settings = session.settings(data_root, results_root)
        root = settings.results_root
        frame = list_records(root, settings, stale_only=stale, profile=profile, dataset=dataset)
        if session.echo_frame_or_nothing(frame, as_json, f"no {'stale ' if stale else ''}run records under {root}"):
            return
        shown = frame.drop(columns=["path", "created", "changed"])
        typer.echo(shown.to_string(index=False))
        explained = frame[frame["changed"] != ""]
        if not explained.empty:  # in full, one record a line: a change list does not fit a table cell
            typer.echo("\nwhat changed / why unknown:")
            for row in explained.itertuples():
                typer.echo(f"  [{row.freshness}] {row.path}\n      {row.changed}")
        counts = frame["freshness"].value_counts().to_dict()
        typer.echo("\n" + ", ".join(f"{n} {state}" for state, n in sorted(counts.items())))

    @results.command("record")
    def record_cmd(
        profile: str = typer.Option(..., "--profile", help="The profile whose runs become reference results "
                                    f"(cpu or gpu; one of {', '.join(profiles.names())}).", callback=PROFILE),
        results_root: Path = typer.Option(None, "--results-root", help=_RESULTS_ROOT_HELP),
        reference_root: Path = typer.Option(None, "--reference-root", help="Where reference results live "
                                            "(default: reference/ in the repository)."),
        dataset: str = typer.Option(None, "--dataset", help=_DATASET_HELP, callback=DATASET),
    ) -> None:
        """Copy finished runs (records + test predictions, every kind) into the committed reference results.

        Every kind of run a build of the profile made is copied (fine-tuning, intermediate stages, SciERC,
        frozen baselines, and the pretraining run of the profile's pretraining configuration), newest
        configuration only; model weights and encoders are not. `medibio book --from reference` renders
        the book from them; the chapters show them as recorded results beside a re-execution.
        """
        from medibio.results import recorded as reference

        root = session.settings(results_root=results_root).results_root
        target = reference_root or reference.REFERENCE_ROOT
        written = reference.record(reference.recordable(root, profile, dataset), root, target)
        typer.echo(f"{len(written)} record(s) of profile {profile} copied to {target}")

    @results.command("verify")
    def verify_cmd(
        root: Path = typer.Argument(None, metavar="[ROOT]", help="The results root to verify (default: "
                                    "$MEDIBIO_RESULTS or results/), e.g. reference."),
        add_digests: bool = typer.Option(False, "--add-digests", help="Write into each intact record that lacks "
                                         "them the digests of the files it names, and a seal (records made before "
                                         "digests; only for files known to be the run's own)."),
        data_root: Path = typer.Option(None, "--data-root", help="Data root whose gold the test predictions are "
                                       "re-scored against (default: $MEDIBIO_DATA or ../shared/data; without "
                                       "one, scores are not re-scored)."),
        rescore: bool = typer.Option(True, "--rescore/--no-rescore", help="Re-score each record's test "
                                     "predictions and compare with its scores (memoised in the cache)."),
    ) -> None:
        """Check a results root as a whole: every record parses, lies in its own folder and is still the record
        its run wrote (its seal), each predictions file matches the digest in its record, its scores are
        those of its predictions (re-scored against the data root's gold), and no file lies there without a
        record. Exits 1 on a problem."""
        from medibio.core.errors import MedibioError
        from medibio.results.rescore import MEMO_NAME
        from medibio.results.verify import verify

        settings = session.settings(data_root)
        gold = settings.data_root if rescore and (settings.data_root / "blurb").is_dir() else None
        if rescore and gold is None and data_root is not None:
            raise MedibioError(f"{data_root}: no blurb/ folder; expected a data root to re-score the predictions "
                               "against (or --no-rescore)")
        found = verify(root or settings.results_root, add_missing=add_digests, data_root=gold,
                       memo=settings.cache_root / MEMO_NAME)
        typer.echo(found.describe())
        if rescore and gold is None:
            typer.echo(f"(no data root with blurb/ at {settings.data_root}: give --data-root to re-score)")
        if not found.ok:
            raise typer.Exit(1)

    @results.command("compare")
    def compare(
        system_a: str = typer.Argument(..., metavar="A", help="System A as PROFILE/MODEL/VARIANT, e.g. "
                                       "cpu/minilm/ift-STS-B (all its seeds).", callback=SYSTEM),
        system_b: str = typer.Argument(..., metavar="B", help="System B, e.g. cpu/minilm/base.", callback=SYSTEM),
        task: list[str] = typer.Option(None, "--task", help="Dataset, group or comma list (repeatable; "
                                       "default: every dataset both systems have).", callback=check.lookup(_tasks)),
        resamples: int = typer.Option(1000, "--resamples", min=1, help="Resamples of the test units."),
        seed: int = typer.Option(0, "--seed", help="Random seed of the resampling."),
        method: Method = typer.Option(Method.bootstrap, "--method", help="p-value: paired bootstrap with "
                                      "the shift method (Koehn 2004; Berg-Kirkpatrick et al. 2012) or "
                                      "approximate randomisation (Noreen 1989; Riezler & Maxwell 2005)."),
        as_json: bool = typer.Option(False, "--json", help="Print JSON: {\"comparisons\": [one object per "
                                     "dataset], \"left_out\": [...]}."),
        results_root: Path = typer.Option(None, "--results-root", help=_RESULTS_ROOT_HELP),
        data_root: Path = typer.Option(None, "--data-root", help=_DATA_ROOT_HELP),
    ) -> None:
        """Paired significance test of A minus B on the same test examples, seeds pooled.

        A system is PROFILE/MODEL/VARIANT as in the record paths (results/finetune/PROFILE/MODEL/VARIANT/),
        MODEL a tag (minilm, tiny-deberta) or any model name medibio resolves. Each system's score is the
        mean over its seeds; both are scored on the same resamples of the test units (sentences or
        documents for NER/PICO, abstracts for HoC, pairs or questions otherwise). One row per dataset:
        the difference, its 95% percentile-bootstrap interval, a two-sided p-value and whether p < 0.05.
        """
        from medibio.results.significance import compare_systems, format_comparisons

        settings = session.settings(data_root, results_root)
        datasets = [t for item in task for t in item.split(",")] if task else None
        from medibio.core.errors import MedibioError

        found, left_out = compare_systems(settings.results_root, system_a, system_b, datasets=datasets,
                                          resamples=resamples, seed=seed, method=method.value,
                                          data_root=settings.data_root)
        if not found:
            raise MedibioError(f"{system_a} and {system_b} have no dataset in common with test predictions under "
                               f"{settings.results_root}" + "".join(f"\n  {line}" for line in left_out))
        if as_json:
            session.echo_json({"comparisons": [c.to_dict() for c in found], "left_out": left_out})
        else:
            typer.echo(format_comparisons(found, left_out))

    @results.command("drift")
    def drift_cmd(
        recorded: Path = typer.Argument(..., help="The results folder to compare with (a recording, or a build "
                                        "of other code)."),
        results_root: Path = typer.Option(None, "--results-root", help=_RESULTS_ROOT_HELP),
        data_root: Path = typer.Option(None, "--data-root", help=_DATA_ROOT_HELP),
        profile: str = typer.Option(None, "--profile", help=_PROFILE_HELP, callback=PROFILE),
        as_json: bool = typer.Option(False, "--json", help="Print one object per run as JSON."),
        paired_test: bool = typer.Option(False, "--paired", help="Instead, one row per configuration: the "
                                         "paired bootstrap of (mean here - mean recorded) on the same test "
                                         "units, its 95% interval and p (what judges a single-seed run)."),
    ) -> None:
        """Each run of this results folder against the same run in RECORDED: identical test predictions, or
        the score difference, the CPU threads each computed with and whether the difference lies inside the
        recorded seed spread. Runs are matched by kind, profile, model, variant, dataset and seed."""
        from medibio.core.errors import MedibioError
        from medibio.results.drift import drift, paired, summary
        from medibio.runs.records import require_root

        settings = session.settings(results_root=results_root, data_root=data_root)
        root = require_root(settings.results_root)
        recorded = require_root(recorded, "recorded results root")
        if paired_test:
            found = paired(root, recorded, profile=profile, data_root=settings.data_root)
            if found.empty:
                raise MedibioError(f"no configuration with test predictions in both {root} and {recorded}")
            if not session.echo_frame_or_nothing(found, as_json, ""):
                typer.echo(found.to_string(index=False, float_format=lambda x: f"{x:.2f}"))
                holds = int(found["interval holds 0"].sum())
                typer.echo(f"\n{len(found)} configurations: the 95% interval of the difference holds 0 for {holds}")
            return
        frame = drift(root, recorded, profile=profile)
        if frame.empty:
            raise MedibioError(f"no run records under {root} or {recorded}" + (f" of profile {profile}" if profile
                                                                              else ""))
        if session.echo_frame_or_nothing(frame, as_json, ""):
            return
        shown = frame.drop(columns=["digest", "recorded digest"])
        typer.echo(shown.to_string(index=False, float_format=lambda x: f"{x:.2f}"))
        typer.echo("\n" + summary(frame))

    app.add_typer(results, name="results")
