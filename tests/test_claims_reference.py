"""Every claim's numbers on the recorded runs of ``reference/`` stay as they were pinned: the verdicts, the
paper's and our differences, intervals and p-values, and the rows beside each verdict. A restructuring of the
claims, the experiments or the significance code must leave them unchanged; a change that moves them on purpose
pins them again (the file is :func:`pinned` of ``medibio claims --profile cpu --results-root reference --json``,
written by ``python tests/test_claims_reference.py > tests/fixtures/claims-reference.json``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

PINNED = Path(__file__).parent / "fixtures" / "claims-reference.json"
REPO = Path(__file__).resolve().parents[1]


def pinned(found: dict[str, Any]) -> dict[str, Any]:
    """What is pinned of the claims' JSON: per claim, both verdicts, the design label and every number."""
    out = {}
    for row in found["claims"]:
        ours, paper = row["ours"], row["paper"]
        out[row["id"]] = {
            "verdict": row["verdict_words"], "paper verdict": paper["verdict"], "design": row["design"],
            "paper": [paper["a"], paper["b"], paper["diff"], paper["p"], paper["welch_sd"]],
            "ours": [ours["diff"], ours["low"], ours["high"], ours["p"], ours["a_score"], ours["b_score"],
                     ours["resamples"]],
            "paper's effect": [row["paper_effect"], row["paper_effect_p"], row["paper_effect_end"]],
            "beside": [[b["label"], b["diff"], b["low"], b["high"], b["p"]] for b in ours["beside"]],
            "seed sds": [[s["system"], s["seeds"], s["sd"]] for s in row["seed_sds"]],
        }
    return out


def claims_json(data_root: Path | None = None) -> dict[str, Any]:
    """``medibio claims --profile cpu --results-root reference --json``, as a user runs it."""
    data = ["--data-root", str(data_root)] if data_root else []
    done = subprocess.run([sys.executable, "-m", "medibio", "claims", "--profile", "cpu", "--results-root",
                           "reference", "--json", *data], cwd=REPO, capture_output=True, text=True, check=True,
                          timeout=1200)
    return json.loads(done.stdout)


def _close(got: Any, want: Any, where: str) -> None:
    if isinstance(want, float) and isinstance(got, float):
        assert got == pytest.approx(want, rel=1e-9, abs=1e-12), where
    elif isinstance(want, list) and isinstance(got, list):
        assert len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            _close(g, w, f"{where}[{i}]")
    else:
        assert got == want, where


@pytest.mark.slow
@pytest.mark.realdata
def test_the_claims_on_the_recorded_runs_are_as_pinned(data_root: Path) -> None:
    got = pinned(claims_json(data_root))
    want = json.loads(PINNED.read_text(encoding="utf-8"))
    assert list(got) == list(want)
    for claim, fields in want.items():
        for name, value in fields.items():
            _close(got[claim][name], value, f"{claim}: {name}")


def test_the_readme_states_the_pinned_verdicts() -> None:
    """The README's first sentence says what the book finds: its counts are those of the pinned claims (the
    test above pins them to the recorded runs), counted under each row's label as the claims page counts them."""
    import re

    from medibio.book import rules

    want = json.loads(PINNED.read_text(encoding="utf-8"))
    tested = [c for c in want.values() if c["ours"][1] is not None]
    untestable = [c for c in tested if c["design"] in rules.UNTESTABLE]
    proxy = [c for c in tested if c["design"] == rules.PROXY]
    plain = [c for c in tested if c["design"] == rules.COMPARABLE]
    testable = [c for c in tested if c["design"] not in rules.UNTESTABLE]
    excluded = [c for c in testable if c["paper's effect"][1] is not None and c["paper's effect"][1] < rules.ALPHA]
    readme = " ".join((REPO / "README.md").read_text(encoding="utf-8").split())
    found = re.search(r"\*\*What the book finds\*\*, on two CPU cores: (\d+) of the paper's (\d+) claims can be "
                      r"tested and none is supported at this scale \((\d+) inconclusive, (\d+) contradicted on a "
                      r"proxy task, (\d+) run but not testable as designed: .*?\); the other (\d+) need", readme)
    assert found, "the README's first sentence is not where it was"
    assert [int(n) for n in found.groups()] == [len(tested), len(want), len(plain), len(proxy), len(untestable),
                                                len(want) - len(tested)]
    assert all(c["verdict"].startswith(rules.INCONCLUSIVE) for c in plain)  # none supported, none contradicted
    assert all(c["verdict"] == f"proxy {rules.CONTRADICTED}" for c in proxy)
    assert (f"for {len(excluded)} of the {len(testable)} claims the design could test, the paper's own effect lies "
            "outside our interval") in readme


if __name__ == "__main__":
    print(json.dumps(pinned(claims_json()), indent=1, ensure_ascii=False))
