"""The isolated checker: outcomes from a child process, and children replaced on schedule."""

from __future__ import annotations

import pytest

from pytest_cgraph import checkers
from pytest_cgraph.checkers import IsolatedChecker
from pytest_cgraph.failures import Case, Verdict

ADD_ONE = """
import torch


def program(a0):
    return (a0 + 1,)


def inputs(k):
    return (torch.ones(2),)


FRESH_INPUTS = False
ITERS = 3
"""

EAGER_RAISES = ADD_ONE.replace("a0 + 1", "a0.view(3)")


def case(source: str) -> Case:
    return Case(source, "aot_eager", "cpu", 3, family="views", nodeid="cgraph::views")


def test_a_child_checks_programs_and_is_replaced_after_its_quota(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(checkers, "RECYCLE_PROGRAMS", 2)
    isolated = IsolatedChecker((), timeout=60.0)
    try:
        verdicts = [
            isolated.check(case(source)).verdict for source in (ADD_ONE, EAGER_RAISES, ADD_ONE)
        ]
        first_child = isolated.children_started
    finally:
        isolated.close()
    assert verdicts == [Verdict.PASS, Verdict.INVALID, Verdict.PASS]
    assert first_child == 2  # the third program went to a fresh child
    assert isolated.child_pid is None


# Two programs that kill their process in different functions of "torch" (code
# compiled under a torch file name, as a frame of torch's would be). Eager runs
# each first, so the crash is the program's own: what matters here is that the
# child's last words reach the parent and name where it died.
CRASH_IN = """
import ctypes

import torch

_CODE = "import ctypes\\ndef {name}():\\n    ctypes.string_at(0)\\n"
_SPACE = {{}}
exec(compile(_CODE, "/site-packages/torch/_{name}.py", "exec"), _SPACE)


def program(a0):
    _SPACE["{name}"]()
    return (a0 + 1,)


def inputs(k):
    return (torch.ones(2),)


FRESH_INPUTS = False
ITERS = 3
"""


def test_deaths_in_different_functions_are_different_failures() -> None:
    isolated = IsolatedChecker((), timeout=60.0)
    try:
        outcomes = [
            isolated.check(case(CRASH_IN.format(name=name))) for name in ("read_zero", "write_zero")
        ]
        children = isolated.children_started
    finally:
        isolated.close()
    assert [outcome.verdict for outcome in outcomes] == [Verdict.DIED, Verdict.DIED]
    first, second = (outcome.difference for outcome in outcomes)
    assert first is not None and second is not None
    # torch's innermost frame names the site, not ctypes's below it
    assert first.message == "in read_zero (torch/_read_zero.py)"
    assert first.headline() == (
        "crash of the process: killed by SIGSEGV in read_zero (torch/_read_zero.py)"
    )
    assert second.message == "in write_zero (torch/_write_zero.py)"
    assert first.signature != second.signature
    assert children == 2  # the dead child was replaced
