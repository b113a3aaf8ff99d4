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


MEETS_A_KNOWN_TORCH_BUG = """
import torch


def test_a_write_after_set_onto_a_view_of_itself(cgraph):
    def model(a0):
        v0 = a0[1]
        v0.set_(v0)
        v0.add_(1)
        return a0

    cgraph.check(model, torch.zeros(2, 2))
"""


def test_a_check_that_meets_a_known_torch_bug_names_it(pytester: pytest.Pytester) -> None:
    # The fixture checks a function, not a written-out program: the crash is
    # judged by its signature, whose message names its bug (on an H100, the
    # kept momentum buffer of an optimizer step met the overwritten-output error).
    pytester.makepyfile(MEETS_A_KNOWN_TORCH_BUG)
    result = pytester.runpytest(
        "--cgraph", "--cgraph-backend=aot_eager", "-m", "not cgraph", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*cannot mutate tensors with frozen storage*",
            "*cgraph: a known torch bug, set-self-frozen-storage (torch-*/crash-*.toml)",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            # outside torch.compile's contract (see the known-bugs page): not to file
            "known: 1 bug(s) seen again (1 registry entry; 1 of them not to file), not new "
            "(a marked test or fixture "
            "check that meets one fails all the same)"
        ]
    )


# A known torch bug (dynamo-grad-set-on-inplace-result-lost): a grad difference.
SGD_STEP_BY_HAND = """
import torch


def test_sgd_by_hand(cgraph):
    def step(w, x):
        loss = (w * x).sum()
        loss.backward()
        with torch.no_grad():
            w -= 0.1 * w.grad
            w.grad = None
        return loss.detach()

    cgraph.check(step, torch.ones(3, requires_grad=True), torch.arange(3.0))
"""


def test_a_registry_that_cannot_be_read_is_said_not_passed_over(
    pytester: pytest.Pytester,
) -> None:
    # Read at the first failure (no --cgraph, no --cgraph-known: nothing read it
    # at start): the bug goes unnamed, and the failure says why.
    pytester.makepyfile(SGD_STEP_BY_HAND)
    repros = pytester.mkdir("cgraph-repros")
    (repros / "torn.py").write_text("# pytest-cgraph repro\n# base signature: grad-grad\n")
    result = pytester.runpytest("--cgraph-backend=eager", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*cgraph: no known bug could be named: cgraph-repros/torn.py: a pytest-cgraph "
            "registry file, but *; restore it (or record it again *) or remove it",
        ]
    )
    result.stdout.no_fnmatch_line("*a known torch bug*")


FAILS_WITH_A_PROGRAM = """
import torch


def test_a_model_that_differs(cgraph):
    def model(x, y):
        return torch.relu(x) * y

    cgraph.check(model, torch.randn(4), torch.ones(4), backend="relu_accuracy_error_TESTING_ONLY")
"""


@pytest.mark.parametrize("workers", WORKERS)
def test_a_failing_check_writes_its_call_as_a_repro_file(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    # The check's function and arguments, written out as a program: the
    # failure ends in the repro line, and the file replays the difference.
    pytester.makepyfile(FAILS_WITH_A_PROGRAM)
    run = pytester.runpytest_subprocess if workers else pytester.runpytest
    result = run("--cgraph", "-m", "not cgraph", "-p", "no:cacheprovider", *workers)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*value difference at iteration 1, output #0*",
            "cgraph repro (written): cgraph-repros/value-output*.py*",
            "failures: 1 new signature(s) (1 silent), 1 with a verified repro",
        ]
    )
    (repro,) = (pytester.path / "cgraph-repros").glob("value-output*.py")
    text = repro.read_text()
    assert "def model(x, y):" in text and "relu_accuracy_error_TESTING_ONLY" in text
    assert "# found by: test_a_failing_check_writes_its_call_as_a_repro_file.py" in text
