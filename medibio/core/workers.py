"""Work spread over the machine's cores: a pool of worker processes, one per usable core, for the pure-Python
work one process would do on one core (scoring prediction files, resampling test sets, building run pages).

A call handed to a worker must depend on its arguments only, so that it returns in a worker what it returns in
the caller. A call that fails in a worker is made again in the caller, where its error is raised in full: an
error's own fields do not survive the trip between processes (``InputFormatError`` names a file and a line).
Workers are forked (Linux), so they start with the caller's modules and caches loaded, and each keeps one BLAS
thread: a worker per core already uses every core.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import multiprocessing
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

import threadpoolctl

from medibio.core.capacity import usable_cores


def _start_worker() -> None:
    """One BLAS thread, and garbage collection on (the caller may fork the pool inside :func:`no_collections`)
    for the worker's own objects only: what it inherited is frozen, never walked again by a collection."""
    threadpoolctl.threadpool_limits(1)
    gc.freeze()
    gc.enable()


@functools.cache
def _pool() -> ProcessPoolExecutor:
    return ProcessPoolExecutor(usable_cores(), mp_context=multiprocessing.get_context("fork"),
                               initializer=_start_worker)


def apart(count: int, waited: bool = True) -> bool:
    """Whether ``count`` calls go to worker processes: several cores, processes that fork, and several calls
    where the caller waits for them (a call it does not wait for is worth a worker alone: it goes on meanwhile)."""
    return ((count > 1 or not waited) and usable_cores() > 1
            and "fork" in multiprocessing.get_all_start_methods())


def submit(work: Callable[..., Any], calls: Sequence[tuple[Any, ...]],
           sizes: Sequence[float] | None = None) -> list[Future] | None:
    """``work(*args)`` for each of ``calls`` handed to the workers, the largest first by ``sizes`` (so that no
    core waits on one late call); the futures in the order of ``calls``, None where the pool is broken (a
    worker was killed: the next call starts a new one)."""
    order = sorted(range(len(calls)), key=lambda k: -sizes[k]) if sizes is not None else range(len(calls))
    try:
        pool = _pool()
        futures = {k: pool.submit(work, *calls[k]) for k in order}
    except BrokenProcessPool:
        _pool.cache_clear()
        return None
    return [futures[k] for k in range(len(calls))]


def result(future: Future, work: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    """A submitted call's value; where it failed in the worker, ``work(*args)`` made here (raising here)."""
    try:
        return future.result()
    except BrokenProcessPool:
        _pool.cache_clear()
    except Exception:  # noqa: BLE001, S110 - made again below, where the error is raised whole
        pass
    return work(*args)


def side_by_side(work: Callable[..., Any], calls: Sequence[tuple[Any, ...]],
                 sizes: Sequence[float] | None = None) -> list[Any]:
    """``[work(*args) for args in calls]``, the calls shared among the workers where :func:`apart` says so."""
    futures = submit(work, calls, sizes) if apart(len(calls)) else None
    if futures is None:
        return [work(*args) for args in calls]
    return [result(future, work, args) for future, args in zip(futures, calls, strict=True)]


@contextlib.contextmanager
def no_collections() -> Iterator[None]:
    """No cyclic garbage collection while work builds many small objects that stay alive (a run page's rows,
    a test set's spans): each collection walks every live object again, and with collections on they took
    about a third of the run pages' time. The few cycles the work leaves go to the collector's next rounds (a
    collection at the end walked every object still alive, a tenth of the run pages' CPU in their workers)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
