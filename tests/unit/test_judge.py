"""The one judge: every ruling, in its order, and the layer asked once per program."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_cgraph.failures import Case, Outcome, Verdict
from pytest_cgraph.oracle.difference import Difference, Kind, Place, Role
from pytest_cgraph.registry.entries import KnownBug, Registry
from pytest_cgraph.registry.judge import HarnessError, Judge, Ruling

WRONG_OUTPUT = Difference(Kind.VALUE, 2, Place(Role.OUTPUT, index=0))
ENTRY = KnownBug(WRONG_OUTPUT.signature, "aot_eager", Path("known/value-output.toml"))
CASE = Case("def program(a0):\n    return a0 + 1\n", "aot_eager", "cpu", 5)


def judge(**options: object) -> tuple[Judge, list[str]]:
    asked: list[str] = []

    def layer_of(case: Case, difference: Difference) -> str | None:
        asked.append(case.source)
        return "aot_eager"

    return Judge(Registry([ENTRY]), layer_of, **options), asked  # type: ignore[arg-type]


def test_no_difference_passes_and_a_rejected_program_is_invalid() -> None:
    rules, asked = judge()
    assert rules(CASE, Outcome(Verdict.PASS)).ruling is Ruling.PASSED
    invalid = rules(CASE, Outcome(Verdict.INVALID, reason="eager raised"))
    assert invalid.ruling is Ruling.INVALID and not invalid.ruling.differs
    assert asked == []


def test_a_registry_entry_makes_a_difference_known_asking_the_layer_once() -> None:
    rules, asked = judge()
    first = rules(CASE, Outcome(Verdict.FAIL, WRONG_OUTPUT))
    second = rules(CASE, Outcome(Verdict.FAIL, WRONG_OUTPUT))
    assert first.ruling is second.ruling is Ruling.KNOWN
    assert first.known is ENTRY and first.failure is None
    assert asked == [CASE.source]  # the ladder climbed once for this program


def test_another_layer_is_another_bug() -> None:
    rules = Judge(Registry([ENTRY]), lambda case, difference: "inductor")
    judgement = rules(CASE, Outcome(Verdict.FAIL, WRONG_OUTPUT))
    assert judgement.ruling is Ruling.NEW and judgement.failure is not None
    assert judgement.failure.case == CASE and judgement.failure.difference == WRONG_OUTPUT


def test_strict_sets_the_registry_aside_but_not_the_runs_findings() -> None:
    rules, asked = judge(strict=True)
    assert rules(CASE, Outcome(Verdict.FAIL, WRONG_OUTPUT)).ruling is Ruling.NEW
    rules, _ = judge(strict=True, found=lambda case, difference: True)
    assert rules(CASE, Outcome(Verdict.FAIL, WRONG_OUTPUT)).ruling is Ruling.FOUND
    assert asked == []


def test_a_registry_claim_comes_before_the_runs_findings() -> None:
    rules, _ = judge(found=lambda case, difference: True)
    assert rules(CASE, Outcome(Verdict.FAIL, WRONG_OUTPUT)).ruling is Ruling.KNOWN
    other = Difference(Kind.VALUE, 1, Place(Role.ARGUMENT, index=0))
    found = rules(CASE, Outcome(Verdict.FAIL, other))
    assert found.ruling is Ruling.FOUND and found.ruling.differs and found.failure is None


def test_the_harness_failing_is_an_error_never_a_ruling() -> None:
    rules, _ = judge()
    with pytest.raises(HarnessError, match="pipe broke"):
        rules(CASE, Outcome(Verdict.ERROR, reason="pipe broke"))


def test_a_test_with_no_inline_program_is_judged_by_its_signature_alone() -> None:
    # A marked test whose arguments cannot be written inline has no program to
    # replay up the ladder or read calls from. A crash whose message names its
    # bug is still known (an H100 run: a training step's kept optimizer state
    # meeting the overwritten-output error); a broad signature is not.
    overwritten = Difference(
        Kind.CRASH,
        2,
        Place(Role.COMPILED, name="call"),
        exception_type="RuntimeError",
        message="Error: accessing tensor output of CUDAGraphs that has been overwritten",
    )
    crash_entry = KnownBug(
        overwritten.signature,
        "cudagraphs",
        Path("known/crash.toml"),
        bug="cg-generation-invalidates-kept-tensors",
        essential=("ADVANCE",),
    )
    asked: list[str] = []

    def layer_of(case: Case, difference: Difference) -> str | None:
        asked.append(case.source)
        return "aot_eager"

    # A broad signature's entry recorded without a layer and claiming any calls
    # (no essential ones) must not claim a program it cannot see either.
    layerless = KnownBug(
        WRONG_OUTPUT.signature, None, Path("known/value-output.toml"), bug="b", essential=()
    )
    rules = Judge(Registry([layerless, crash_entry]), layer_of)
    unwritten = Case("", "cudagraphs", "cuda", 5)
    assert rules(unwritten, Outcome(Verdict.FAIL, overwritten)).known is crash_entry
    assert rules(unwritten, Outcome(Verdict.FAIL, WRONG_OUTPUT)).ruling is Ruling.NEW
    assert asked == []  # nothing to replay: never asked
