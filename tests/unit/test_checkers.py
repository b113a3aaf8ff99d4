"""The isolated checker: outcomes from a child process, and children replaced on schedule."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

from cgraph_doubles.crashing import crashing_program
from pytest_cgraph.checking import checkers
from pytest_cgraph.checking.checkers import IsolatedChecker
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


def test_a_child_started_ahead_checks_the_first_program() -> None:
    """A time-boxed item starts the child before it takes its share of the box, so
    that the first item alone does not pay for it: the child started ahead is
    the one that checks, and starting again is free."""
    isolated = IsolatedChecker((), timeout=60.0)
    try:
        isolated.start("cpu")
        pid = isolated.child_pid
        isolated.start("cpu")
        outcome = isolated.check(case(ADD_ONE))
        assert pid is not None and isolated.child_pid == pid
        assert isolated.children_started == 1
    finally:
        isolated.close()
    assert outcome.verdict is Verdict.PASS, outcome


def test_a_child_checks_with_what_it_inherited_frozen() -> None:
    watched = Case(
        ADD_ONE,
        "cgraph_doubles.heapwatch:frozen_heap_required",
        "cpu",
        3,
        family="views",
        nodeid="cgraph::views",
    )
    isolated = IsolatedChecker((), timeout=60.0)
    try:
        outcome = isolated.check(watched)
    finally:
        isolated.close()
    assert outcome.verdict is Verdict.PASS, outcome


def crashing(name: str, in_eager: bool = False) -> Case:
    return case(crashing_program(name, in_eager))


def test_deaths_in_different_functions_are_different_failures() -> None:
    isolated = IsolatedChecker((), timeout=60.0)
    try:
        outcomes = [isolated.check(crashing(name)) for name in ("read_zero", "write_zero")]
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


def test_a_program_that_kills_eager_itself_is_invalid_not_a_difference() -> None:
    isolated = IsolatedChecker((), timeout=60.0)
    try:
        outcome = isolated.check(crashing("read_zero", in_eager=True))
    finally:
        isolated.close()
    assert outcome.verdict is Verdict.INVALID and outcome.difference is None
    assert outcome.reason == "eager itself was killed by SIGSEGV in read_zero (torch/_read_zero.py)"


def test_the_compile_stack_is_imported_before_a_time_limit_starts() -> None:
    # In a fresh process: a limit that fires inside torch's first import of Inductor
    # leaves it half-imported, and every later check of the process fails.
    import subprocess
    import sys
    import textwrap

    child = textwrap.dedent(
        """
        import contextlib, sys
        from pytest_cgraph.checking import checkers, guard
        from pytest_cgraph.failures import Case

        seen = []

        @contextlib.contextmanager
        def watched(seconds):
            seen.append("torch._inductor.cudagraph_trees" in sys.modules)
            yield

        guard.time_limit = watched
        source = "import torch\\n\\ndef program(a0):\\n    return (a0 + 1,)\\n\\n" + (
            "def inputs(k):\\n    return (torch.ones(2),)\\n"
        )
        outcome = checkers.InProcessChecker(None, 1.0).check(Case(source, "eager", "cpu", 2))
        print(outcome.verdict, seen)
        """
    )
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, check=True)
    assert done.stdout.split("\n")[-2] == "pass [True]", done.stdout + done.stderr


def test_a_cuda_program_gets_a_spawned_child_and_a_cpu_one_a_forked_child() -> None:
    # torch refuses CUDA in a child forked from a process that asked CUDA
    # anything, and the forkserver's imports do: on an H100 every campaign
    # program of a time-boxed (so isolated) hunt ended "Cannot re-initialize
    # CUDA in forked subprocess".
    assert checkers.start_method("cuda") == "spawn"
    assert checkers.start_method("cuda:1") == "spawn"
    assert checkers.start_method("cpu") == "forkserver"


def test_a_spawned_child_checks_programs_and_a_change_of_method_replaces_the_child(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    methods = iter(["spawn", "spawn", "forkserver"])
    monkeypatch.setattr(checkers, "start_method", lambda device: next(methods))
    isolated = IsolatedChecker((), timeout=120.0)
    try:
        verdicts = [
            isolated.check(case(source)).verdict for source in (ADD_ONE, EAGER_RAISES, ADD_ONE)
        ]
        children = isolated.children_started
    finally:
        isolated.close()
    assert verdicts == [Verdict.PASS, Verdict.INVALID, Verdict.PASS]
    assert children == 2  # one spawned child for two programs, then a forked one


def test_a_spawned_child_imports_torch_before_the_first_programs_time_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A spawned child imports torch, the compile stack and the setup modules
    # itself (seconds on a busy machine): the first program's limit must not count that.
    monkeypatch.setattr(checkers, "start_method", lambda device: "spawn")
    # Its setup module sleeps longer than the limit while it is imported.
    isolated = IsolatedChecker(("cgraph_doubles.slow_import",), timeout=4.0)
    try:
        outcome = isolated.check(case(ADD_ONE))
    finally:
        isolated.close()
    assert outcome.verdict is Verdict.PASS, outcome


@pytest.fixture
def own_threads() -> Iterator[None]:
    """This process's intra-op thread count, set back after the test."""
    import torch

    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_a_child_checks_with_its_parents_thread_count_or_the_cases(own_threads: None) -> None:
    # An xdist worker runs torch with its share of the cores and replays in
    # its own process what its child found: a program that fails only with
    # several threads must fail in both or in neither.
    import torch

    threaded = Case(
        ADD_ONE,
        "faulty_crash_with_threads",
        "cpu",
        3,
        family="views",
        nodeid="cgraph::views",
        setup_modules=("cgraph_doubles.faults",),
    )
    isolated = IsolatedChecker(("cgraph_doubles.faults",), timeout=60.0)
    try:
        verdicts = []
        for parent_threads in (1, 2):
            torch.set_num_threads(parent_threads)
            verdicts.append(isolated.check(threaded).verdict)
        torch.set_num_threads(1)
        named = isolated.check(dataclasses.replace(threaded, threads=2)).verdict
    finally:
        isolated.close()
    assert verdicts == [Verdict.PASS, Verdict.FAIL]
    assert named is Verdict.FAIL  # the case's own count wins over the parent's
