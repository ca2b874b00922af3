"""Worker processes (medibio.core.workers) give what the caller computes alone: the same values in the order of
the calls, and an error raised whole by the caller, even where it cannot cross between processes."""

from __future__ import annotations

import os

import pytest

from medibio.core import workers
from medibio.core.errors import InputFormatError


def _power(base: int, exponent: int) -> tuple[int, int]:
    return base**exponent, os.getpid()


def _refuse(name: str) -> str:
    if name == "bad":
        raise InputFormatError(f"{name}.jsonl", 3, "a JSON object", "nothing")
    return name


@pytest.fixture
def two_cores(monkeypatch):
    monkeypatch.setattr(workers, "usable_cores", lambda: 2)


def test_the_calls_come_back_in_their_order_from_other_processes(two_cores) -> None:
    found = workers.side_by_side(_power, [(2, k) for k in range(12)], sizes=list(range(12)))
    assert [value for value, _ in found] == [2**k for k in range(12)]
    assert os.getpid() not in {pid for _, pid in found}


def test_a_call_that_fails_in_a_worker_raises_its_whole_error_here(two_cores) -> None:
    with pytest.raises(InputFormatError) as raised:
        workers.side_by_side(_refuse, [("good",), ("bad",)])
    assert (raised.value.line, raised.value.expected) == (3, "a JSON object")
    assert workers.side_by_side(_refuse, [("good",), ("fine",)]) == ["good", "fine"]  # the pool still works


def test_one_core_or_one_waited_call_stays_in_this_process(monkeypatch) -> None:
    monkeypatch.setattr(workers, "usable_cores", lambda: 1)
    assert not workers.apart(5) and workers.side_by_side(_power, [(3, 2)]) == [(9, os.getpid())]
    monkeypatch.setattr(workers, "usable_cores", lambda: 2)
    assert workers.apart(2) and not workers.apart(1) and workers.apart(1, waited=False)


def _collecting(_: int) -> bool:
    import gc

    return gc.isenabled()


def test_no_collections_inside_and_workers_collect_even_when_forked_there(two_cores) -> None:
    import gc

    workers._pool.cache_clear()  # a pool forked inside the block below
    with workers.no_collections():
        assert not gc.isenabled()
        assert workers.side_by_side(_collecting, [(k,) for k in range(4)]) == [True] * 4
    assert gc.isenabled()
