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
    result.assert_outcomes(passed=43)


TRAINING_STEPS = str(EXAMPLES / "test_training_steps.py")


def test_training_steps_as_model_authors_write_them_pass_on_cudagraphs(
    pytester: pytest.Pytester,
) -> None:
    # Undetached losses, optimizers, schedulers, accumulation, clipping, Adam
    # behind a batch norm, a mixed-precision step with dropout: no false alarm
    # (aot_eager: the test above).
    result = pytester.runpytest(TRAINING_STEPS, "--cgraph", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["cgraph: backend=cudagraphs *"])
    result.assert_outcomes(passed=12)


@pytest.mark.deep
def test_training_steps_as_model_authors_write_them_pass_on_inductor(
    pytester: pytest.Pytester,
) -> None:
    # Inductor rounds a bfloat16 step differently from eager, and Adam turns
    # a bias's zero gradient into ±lr either way: judged against float64 with
    # eager's own dropout masks, rounding, not a bug.
    result = pytester.runpytest(
        TRAINING_STEPS, "--cgraph", "--cgraph-backend=inductor", "-p", "no:cacheprovider"
    )
    result.stdout.fnmatch_lines(["cgraph: backend=inductor *"])
    result.assert_outcomes(passed=12)


def test_training_steps_fail_when_a_backend_loses_parameter_updates(
    pytester: pytest.Pytester,
) -> None:
    result = pytester.runpytest(
        TRAINING_STEPS,
        "--cgraph",
        # Registered in this process already (cgraph_doubles.inprocess).
        "--cgraph-backend=faulty_lost_input_mutation",
        "-p",
        "no:cacheprovider",
    )
    # Every step whose parameters are arguments fails; the two that update
    # tensors they make themselves have no argument to lose a write to.
    result.assert_outcomes(failed=10, passed=2)
    result.stdout.fnmatch_lines(["*mutation difference at iteration 3, argument model.*"])
