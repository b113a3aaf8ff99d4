"""The oracle catches every hazard class of CUDA-graph replay, and passes correct backends."""

from __future__ import annotations

import pytest

from cgraph_doubles.faults import FAULTS, FaultCase
from pytest_cgraph import EquivalenceError, check_equivalent


def _check(case: FaultCase, backend: object) -> object:
    if case.fresh is not None:
        return check_equivalent(case.program, backend=backend, fresh_args=case.fresh)
    assert case.arguments is not None
    return check_equivalent(case.program, *case.arguments(), backend=backend)


@pytest.mark.parametrize("case", FAULTS, ids=lambda case: case.name)
def test_fault_is_caught_with_its_kind(case: FaultCase) -> None:
    with pytest.raises(EquivalenceError) as caught:
        _check(case, case.backend)
    difference = caught.value.difference
    assert difference.kind == case.kind, str(caught.value)
    # Every fault sits in the replay path: calls 1 and 2 are faithful.
    assert difference.iteration >= 3, str(caught.value)


@pytest.mark.parametrize("case", FAULTS, ids=lambda case: case.name)
@pytest.mark.parametrize("backend", ["aot_eager", "cudagraphs"])
def test_correct_backend_passes_the_same_program(case: FaultCase, backend: str) -> None:
    report = _check(case, backend)
    assert report.iterations == 5


def test_faults_are_registered_by_name() -> None:
    case = next(c for c in FAULTS if c.name == "lost_input_mutation")
    with pytest.raises(EquivalenceError, match="mutation difference at iteration 3"):
        check_equivalent(case.program, *case.arguments(), backend="faulty_lost_input_mutation")


def test_the_transfer_fault_is_confined_to_device_moves() -> None:
    case = next(c for c in FAULTS if c.name == "stale_transfers")
    assert case.fresh is not None
    # The same data flow without a device move, and a dtype cast (not a move): faithful.
    for program in (lambda x, y: x * y, lambda x, y: x.to(y.dtype) * y):
        report = check_equivalent(program, backend=case.backend, fresh_args=case.fresh)
        assert report.iterations == 5
    with pytest.raises(EquivalenceError, match="value difference at iteration 3"):
        check_equivalent(lambda x, y: x.cpu() + y, backend=case.backend, fresh_args=case.fresh)
