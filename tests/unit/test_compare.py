"""Judging observed values: tolerances per dtype, statistics, metadata, signatures."""

from __future__ import annotations

import math

import torch

from pytest_cgraph.compare import Difference, Tolerance, compare_values, value_difference
from pytest_cgraph.observe import TensorSnapshot


def test_float32_default_tolerance_is_assert_closes() -> None:
    tolerance = Tolerance()
    base = torch.ones(3)
    assert value_difference(base, base + 1e-6, tolerance, "value") is None
    assert value_difference(base, base + 1e-4, tolerance, "value") is not None


def test_integers_and_bools_compare_exactly_and_nans_equal() -> None:
    tolerance = Tolerance(rtol=1.0, atol=1.0)
    assert value_difference(torch.tensor([1, 2]), torch.tensor([1, 3]), tolerance, "value")
    assert value_difference(torch.tensor([True]), torch.tensor([False]), tolerance, "value")
    nan = torch.tensor([math.nan, 1.0])
    assert value_difference(nan, nan.clone(), Tolerance(), "value") is None


def test_statistics_point_at_the_worst_and_first_mismatch() -> None:
    found = value_difference(
        torch.tensor([1.0, 2.0, 4.0]), torch.tensor([1.0, 2.5, 8.0]), Tolerance(), "value"
    )
    assert found is not None
    assert found.max_abs == 4.0
    assert found.max_rel == 1.0
    assert found.index == (1,)
    assert found.detail == "2 of 3 elements differ"


def test_argument_layout_changes_are_metadata() -> None:
    x = torch.randn(2, 3)
    found = compare_values(
        TensorSnapshot.of(x), TensorSnapshot.of(x.t()), Tolerance(), "mutation", check_layout=True
    )
    assert found is not None and found.kind == "metadata" and "shape" in found.detail


def test_output_strides_are_not_judged() -> None:
    x = torch.randn(2, 3)
    found = compare_values(
        TensorSnapshot.of(x),
        TensorSnapshot.of(x.t().contiguous().t()),
        Tolerance(),
        "value",
        check_layout=False,
    )
    assert found is None


def test_signature_is_kind_place_and_exception() -> None:
    crash = Difference("crash", 3, "compiled call", exception_type="RuntimeError")
    assert crash.signature == "crash-compiled_call-RuntimeError"
    assert Difference("grad", 2, "grad of x").signature == "grad-grad"
    # indices and argument names do not split one bug into many
    assert Difference("value", 3, "output #2").signature == "value-output"
    assert (
        Difference("value", 3, "output #0 (argument a1)").signature
        == Difference("value", 4, "output #1 (argument b0)").signature
        == "value-output_argument"
    )
    assert Difference("mutation", 3, "argument pair[1]").signature == "mutation-argument"
    stale = Difference("stale output", 2, "output #0 of iteration 2, re-read after iteration 5")
    assert stale.signature == "stale_output-output_of_iteration_re_read_after_iteration"
