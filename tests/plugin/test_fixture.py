"""The ``cgraph`` fixture checks with the session's options, plain and under xdist."""

from __future__ import annotations

import pytest

import cgraph_doubles.inprocess  # noqa: F401  (kept loaded across in-process runs)
from cgraph_doubles.workers import WORKERS

pytest_plugins = "pytester"

USES_FIXTURE = """
import pytest
import torch
from pytest_cgraph import EquivalenceError


def test_passes(cgraph):
    report = cgraph.check(lambda x, y: (x + y) * y, torch.randn(3), torch.randn(3))
    assert (report.backend, report.iterations) == ("aot_eager", 3)


def test_keywords_override_the_session(cgraph):
    report = cgraph.check(torch.sin, torch.randn(2), iters=2)
    assert report.iterations == 2


def test_fails_on_a_difference(cgraph):
    cgraph.check(torch.relu, torch.randn(4), backend="relu_accuracy_error_TESTING_ONLY")
"""


@pytest.mark.parametrize("workers", WORKERS)
def test_fixture_uses_session_options(pytester: pytest.Pytester, workers: list[str]) -> None:
    pytester.makepyfile(USES_FIXTURE)
    # In process, but xdist workers are processes of their own.
    run = pytester.runpytest_subprocess if workers else pytester.runpytest
    result = run(
        "--cgraph",
        "--cgraph-backend=aot_eager",
        "--cgraph-iters=3",
        "-m",
        "not cgraph",  # the fixture only, not the fuzz campaign
        "-p",
        "no:cacheprovider",
        *workers,
    )
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*value difference at iteration 1, output #0*"])
    # Every check of the fixture counts in the summary, the failing one too,
    # whatever worker made it.
    result.stdout.fnmatch_lines(["programs: 3 checked, 0 invalid*", "compiles: [1-9]*"])
