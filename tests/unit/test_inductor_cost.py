"""``benchmarks/inductor_cost.py`` counts a changed verdict for each report field that differs."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from inductor_cost import changed, verdicts


def report(programs=48, invalid=0, failures=(), known=None):
    return {
        "programs": programs,
        "invalid": invalid,
        "seconds": 1.0,
        "failures": [{"signature": signature} for signature in failures],
        "known_hits": known or {},
    }


def test_the_same_verdicts_change_nothing_whatever_the_timings():
    before = report(failures=("a",), known={"k": 2})
    after = {**report(failures=("a",), known={"k": 2}), "seconds": 9.0}
    assert changed(verdicts(before), verdicts(after)) == 0


def test_each_differing_count_and_signature_counts_once():
    before = verdicts(report(failures=("a",), known={"k": 2, "j": 1}))
    after = verdicts(report(programs=47, invalid=1, failures=("b",), known={"k": 3, "j": 1}))
    # programs, invalid, failure a gone, failure b new, known k's hits
    assert changed(before, after) == 5
