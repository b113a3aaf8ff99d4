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
