"""The registry of experiments: every named design, looked up by name.

An experiment is a design that several runs make together: its arms, their budgets and the requests that make
them, and how its runs are named in the records. The kinds of run (:mod:`medibio.pretrain`,
:mod:`medibio.finetune`, ...) train one run each; an experiment says which runs, so that the command line that
trains them, the chapters that show them and the verdicts that judge them all ask the experiment instead of
each spelling its run names (as lm-evaluation-harness looks up a task and HELM a run entry by name).
"""

from __future__ import annotations

from typing import Protocol, TypeVar

from medibio.core.errors import UnknownNameError


class Experiment(Protocol):
    """What the registry knows of every experiment: its name, a sentence, and the profile its fine-tuning runs
    are filed under (None: the profile of the build that runs it)."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def profile(self) -> str | None: ...


E = TypeVar("E", bound=Experiment)
_EXPERIMENTS: dict[str, Experiment] = {}


def register(experiment: E) -> E:
    """Add ``experiment`` under its name (a second experiment of the same name is an error: one design a name)."""
    if experiment.name in _EXPERIMENTS and _EXPERIMENTS[experiment.name] is not experiment:
        raise ValueError(f"an experiment named {experiment.name!r} is already registered")
    _EXPERIMENTS[experiment.name] = experiment
    return experiment


def get(name: str) -> Experiment:
    """The experiment named ``name``, with the known names in the error."""
    try:
        return _EXPERIMENTS[name]
    except KeyError:
        raise UnknownNameError("experiment", name, _EXPERIMENTS) from None


def names() -> list[str]:
    """The registered experiments' names, in the order they were declared."""
    return list(_EXPERIMENTS)
