"""The examples pass against aot_eager too (the suite itself runs them with cudagraphs)."""

from __future__ import annotations

from pathlib import Path

import pytest

import cgraph_doubles.inprocess  # noqa: F401  (kept loaded across in-process runs)

pytest_plugins = "pytester"

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_examples_pass_with_aot_eager(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(
        str(EXAMPLES),
        "--cgraph",
        "--cgraph-backend=aot_eager",
        "-p",
        "no:cacheprovider",
        "-m",
        "not cgraph",  # the examples only, not the fuzz campaign
    )
    result.stdout.fnmatch_lines(["cgraph: backend=aot_eager *"])
    result.assert_outcomes(passed=42)
