"""The ``cgraph summary``'s header tells the iterations the run's checks really ran."""

from __future__ import annotations

import json

import pytest

import cgraph_doubles.inprocess  # noqa: F401  (kept loaded across in-process runs)

pytest_plugins = "pytester"

MARKED_WITH_FOUR = """
import pytest
import torch


@pytest.mark.cgraph_equivalent(iters=4)
def test_four():
    x = torch.ones(3)
    return x.sin()
"""

FIXTURE_WITH_THE_DEFAULT = """
import torch


def test_default(cgraph):
    cgraph.check(torch.cos, torch.ones(2))
"""


def checked(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """A ``--cgraph`` run of the files named (``args`` must name them: a run that
    names no path runs the campaign too)."""
    return pytester.runpytest(
        "--cgraph", "--cgraph-backend=aot_eager", "-p", "no:cacheprovider", "--cgraph-seed=3", *args
    )


def test_the_header_says_the_markers_iterations_not_the_sessions(
    pytester: pytest.Pytester,
) -> None:
    """A marked test with ``iters=4`` ran 4 iterations: the summary said 5, the
    session's default, which no check of the run used."""
    pytester.makepyfile(test_marked=MARKED_WITH_FOUR)
    result = checked(pytester, "test_marked.py", "--cgraph-report=r.json")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["backend aot_eager, device cpu, 4 iterations, seed 3"])
    report = json.loads((pytester.path / "r.json").read_text())
    assert report["iterations"] == {"4": 1}


def test_the_header_gives_the_range_when_checks_ran_different_counts(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_marked=MARKED_WITH_FOUR, test_fixture=FIXTURE_WITH_THE_DEFAULT)
    result = checked(pytester, "test_marked.py", "test_fixture.py", "--cgraph-iters=5")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["backend aot_eager, device cpu, 4-5 iterations, seed 3"])


def test_one_iteration_is_one(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_fixture=FIXTURE_WITH_THE_DEFAULT)
    result = checked(pytester, "test_fixture.py", "--cgraph-iters=1")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["backend aot_eager, device cpu, 1 iteration, seed 3"])
