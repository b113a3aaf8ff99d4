"""A difference's severity: silent, metadata, crash, or torch's own "unsupported"."""

from __future__ import annotations

import pytest

from pytest_cgraph.oracle.difference import Difference, Kind, Place, Role
from pytest_cgraph.registry.severity import Severity, severity_of, worst

OUTPUT = Place(Role.OUTPUT, index=0)
CALL = Place(Role.COMPILED, name="call")


@pytest.mark.parametrize(
    ("kind", "severity"),
    [
        (Kind.VALUE, Severity.SILENT),
        (Kind.MUTATION, Severity.SILENT),
        (Kind.GRAD, Severity.SILENT),
        (Kind.STALE_OUTPUT, Severity.SILENT),
        (Kind.METADATA, Severity.METADATA),
        (Kind.ALIASING, Severity.METADATA),
        (Kind.TIMEOUT, Severity.CRASH),
    ],
)
def test_a_difference_without_an_exception_is_severe_by_its_kind(
    kind: Kind, severity: Severity
) -> None:
    assert severity_of(Difference(kind, 1, OUTPUT)) is severity


@pytest.mark.parametrize(
    "message",
    [
        "aot_autograd() does not yet handle non-differentiable view input mutations.",
        "derivative for set_ is not implemented",
        "Activation checkpoint rematerialization ... does not support RNG ops in recompute.",
        "inplace view on a graph input is not supported",
        "unsupported operation: more than one element of the written-to tensor refers to a "
        "single memory location.",
        "This op is not yet supported with dynamic shapes",
        "torch.compile with aot_autograd does not currently support double backward",
    ],
)
def test_torch_s_own_not_supported_wording_is_unsupported(message: str) -> None:
    crash = Difference(Kind.CRASH, 1, CALL, exception_type="RuntimeError", message=message)
    assert severity_of(crash) is Severity.UNSUPPORTED


@pytest.mark.parametrize(
    ("exception_type", "message"),
    [
        ("RuntimeError", "one of the variables needed for gradient computation has been modified"),
        # The program's own code failing on a None grad: a crash, not torch's limitation.
        ("TypeError", "unsupported operand type(s) for *: 'NoneType' and 'int'"),
        ("AssertionError", "False != True"),
        ("RuntimeError", None),
    ],
)
def test_any_other_crash_is_a_crash(exception_type: str, message: str | None) -> None:
    crash = Difference(Kind.CRASH, 1, CALL, exception_type=exception_type, message=message)
    assert severity_of(crash) is Severity.CRASH


def test_a_dead_process_is_a_crash() -> None:
    died = Difference(Kind.CRASH, 0, Place(Role.PROCESS), message="killed by SIGSEGV")
    assert severity_of(died) is Severity.CRASH


def test_the_worst_severity_is_the_quietest() -> None:
    assert worst([Severity.CRASH, Severity.SILENT, Severity.METADATA]) is Severity.SILENT
    assert worst([Severity.UNSUPPORTED, Severity.CRASH]) is Severity.CRASH
    assert str(Severity.UNSUPPORTED) == "unsupported"
