"""The book-speed benchmark reads a `medibio book` log (each part's estimate beside the time it took) and emulates
a slower CPU with busy processes pinned to each core."""

from __future__ import annotations

import os
import time

import pytest

from benchmarks import book_speed

REPORT = {  # a build's report (build.json), as `medibio book` writes it
    "profile": "cpu", "execute_seconds": 57.2, "html_seconds": 4.1, "run_pages": 293, "run_pages_seconds": 33.4,
    "chapters": [{"slug": "figures_2_4_field_correlation", "status": "executed", "seconds": 7.3},
                 {"slug": "appendix_b_reproducibility", "status": "executed", "seconds": 29.0},
                 {"slug": "glossary", "status": "copied", "seconds": 0.0},
                 {"slug": "what_holds_up", "status": "executed", "seconds": 9.1}],
    "estimated": {"figures_2_4_field_correlation": 5.25, "appendix_b_reproducibility": 25.0, "what_holds_up": 8.0,
                  "run pages": 33.0},
}


def test_each_part_of_a_build_report_beside_its_estimate() -> None:
    assert book_speed.parts(REPORT) == [
        ("figures_2_4_field_correlation", 5.25, 7.3), ("appendix_b_reproducibility", 25.0, 29.0),
        ("what_holds_up", 8.0, 9.1), ("notebooks", None, 57.2), ("html", None, 4.1),
        ("run pages (293)", 33.0, 33.4)]
    # a build without an estimate (--json) has parts and no expected times
    assert book_speed.parts({**REPORT, "estimated": {}})[0] == ("figures_2_4_field_correlation", None, 7.3)
    assert book_speed.clock(299.6) == "5 min 0 s" and book_speed.clock(61.2) == "1 min 1 s"


def test_a_slower_cpu_is_whole_busy_processes_per_core_then_one_busy_for_the_rest() -> None:
    assert book_speed.shares(1) == [] and book_speed.shares(2) == [1.0] and book_speed.shares(3) == [1.0, 1.0]
    assert book_speed.shares(1.6) == [0.375]  # the build keeps 1 - 0.375 = 1/1.6 of each core
    assert book_speed.shares(2.5) == [1.0, 0.2]  # two whole contenders share 0.8: 0.4 = 1/2.5 each
    for factor in (0.5, 0, -1, float("nan")):
        with pytest.raises(ValueError, match="at least 1"):
            book_speed.shares(factor)


def test_busy_processes_are_pinned_one_set_per_core_and_none_asked_none_started() -> None:
    assert book_speed.busy(1) == []
    spinning = book_speed.busy(1.6)
    try:
        cores = sorted(os.sched_getaffinity(0))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(len(os.sched_getaffinity(p.pid)) > 1 for p in spinning):
            time.sleep(0.05)  # each pins itself first thing
        assert len(spinning) == len(cores) and all(p.poll() is None for p in spinning)
        assert sorted(core for p in spinning for core in os.sched_getaffinity(p.pid)) == cores
    finally:
        for process in spinning:
            process.kill()
            process.wait()
