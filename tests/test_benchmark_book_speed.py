"""The book-speed benchmark reads a `medibio book` log: each part's estimate beside the time it took."""

from __future__ import annotations

from benchmarks import book_speed

LOG = """\
estimate: this build renders 648 recorded runs, training nothing (runs read by chapter: appendix_b_reproducibility 648, what_holds_up 484); ...: about 2 min
  by chapter: figures_2_4_field_correlation 0:05, appendix_b_reproducibility 0:25, what_holds_up 0:08, run pages 0:33; 2 chapters at a time
▶ [1/3] Appendix B: reproducibility  (appendix_b_reproducibility; about 1:30 left (done at 14:15 UTC))

chapter                                status        time
figures_2_4_field_correlation          executed   0:00:07
appendix_b_reproducibility             executed   0:00:29
glossary                               copied     0:00:00
what_holds_up                          executed   0:00:09
notebooks                                         0:00:57
html                                              0:00:04
run pages                              293        0:00:33
this build took 1.6 min; estimated before it started: 1.5 min
"""


def test_each_part_of_a_build_log_beside_its_estimate() -> None:
    assert book_speed.parts(LOG) == [
        ("figures_2_4_field_correlation", 5.0, 7.0), ("appendix_b_reproducibility", 25.0, 29.0),
        ("what_holds_up", 8.0, 9.0), ("notebooks", None, 57.0), ("html", None, 4.0),
        ("run pages (293)", 33.0, 33.0)]
    assert book_speed.seconds("1:02:03") == 3723.0
