"""The one task registry: every BLURB dataset, intermediate task and SciERC, by name or alias.

Loaders, metrics, the scorer, the training loop and the book look tasks up here and read their fields;
nobody asks "is this BLURB?" by catching a failed lookup: :attr:`TaskSpec.family` says it.
"""

from __future__ import annotations

from medibio.core.errors import UnknownNameError
from medibio.tasks import ift, scierc
from medibio.tasks.blurb import DATASETS, GROUP_ORDER
from medibio.tasks.spec import FAMILIES, Group, TaskSpec

TASKS: tuple[TaskSpec, ...] = (*DATASETS, *ift.TASKS, scierc.SPEC)

_BY_KEY: dict[str, TaskSpec] = {}
for _spec in TASKS:
    for _key in (_spec.name, _spec.folder if _spec.is_blurb else _spec.name, *_spec.aliases):
        _BY_KEY[_key.lower()] = _spec

# The BLURB sets whose test sets are large (thousands of units): where Table 6's small configuration differences
# can be measured at all; the Table 5 verdicts' declared statistic is their mean, and the CPU study runs them.
LARGE_SETS = ("BC5-chem", "BC5-disease", "NCBI-disease", "BC2GM", "JNLPBA", "ChemProt", "DDI")
_WHAT = {"blurb": "BLURB dataset", "ift": "intermediate task", "scierc": "SciERC task", None: "task"}


def get(name: str, family: str | None = None) -> TaskSpec:
    """A task by canonical name, folder name (BLURB) or alias, case-insensitive; ``family`` restricts the
    lookup (``"blurb"``, ``"ift"``, ``"scierc"``). Unknown names raise :class:`UnknownNameError` listing
    the known ones."""
    spec = _BY_KEY.get(str(name).lower())
    if spec is None or (family is not None and spec.family != family):
        raise UnknownNameError(_WHAT[family], name, names(family))
    return spec


def names(family: str | None = "blurb") -> list[str]:
    """Canonical names of one family (default BLURB, in BLURB order), or of every task (``None``)."""
    if family is not None and family not in FAMILIES:
        raise UnknownNameError("task family", family, FAMILIES)
    return [s.name for s in TASKS if family is None or s.family == family]


def is_blurb(name: str) -> bool:
    """Whether ``name`` is a BLURB dataset (a known task of another family, or an unknown name, is not)."""
    spec = _BY_KEY.get(str(name).lower())
    return spec is not None and spec.is_blurb


def by_group(group: Group | str) -> list[TaskSpec]:
    """The BLURB datasets of one group, in BLURB order."""
    group = Group(group)
    return [s for s in DATASETS if s.group is group]


def resolve(selection: str | list[str] | None) -> list[TaskSpec]:
    """Turn ``"all"``, a group name, a comma list or a list of names into BLURB specs (CLI helper).

    An unknown name raises :class:`UnknownNameError` listing datasets, groups and ``all``; a selection that
    names nothing (``""``, ``","``) is an error too, not an empty run.
    """
    if selection is None or selection == "all" or selection == ["all"]:
        return list(DATASETS)
    items = selection.split(",") if isinstance(selection, str) else list(selection)
    out: list[TaskSpec] = []
    groups = f"; or a group {', '.join(Group.__members__)}; or all"
    for item in (i.strip() for i in items if i.strip()):
        if item.upper() in Group.__members__:
            out.extend(by_group(item.upper()))
        elif item.lower() == "all":
            out.extend(DATASETS)
        elif is_blurb(item):
            out.append(get(item))
        else:
            raise UnknownNameError("dataset", item, names(), groups)
    if not out:
        raise UnknownNameError("dataset selection", selection if isinstance(selection, str) else ",".join(items),
                               names(), groups)
    return list(dict.fromkeys(out))


__all__ = ["DATASETS", "GROUP_ORDER", "TASKS", "by_group", "get", "is_blurb", "names", "resolve"]
