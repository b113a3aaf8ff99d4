"""Judge two observations: the first observable difference, or ``None``.

The order of checks is the order in which a difference is most useful to a
reader: a crash, then what the call returned, how it aliased, what it did to
its arguments, and finally what backward left in ``.grad``.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import torch

from pytest_cgraph.oracle.difference import (
    Difference,
    Kind,
    Place,
    Relation,
    Role,
    describe_relations,
)

# torch.testing.assert_close's documented defaults, (rtol, atol) per dtype.
# Integer and bool tensors compare exactly.
_DEFAULT_TOLERANCES = {
    torch.float16: (1e-3, 1e-5),
    torch.bfloat16: (1.6e-2, 1e-5),
    torch.float32: (1.3e-6, 1e-5),
    torch.float64: (1e-7, 1e-7),
    torch.complex32: (1e-3, 1e-5),
    torch.complex64: (1.3e-6, 1e-5),
    torch.complex128: (1e-7, 1e-7),
}

_SHOWN_ELEMENTS = 6


@dataclass(frozen=True)
class Tolerance:
    """Closeness for floating values; ``None`` means assert_close's default per dtype."""

    rtol: float | None = None
    atol: float | None = None

    def for_dtype(self, dtype: torch.dtype) -> tuple[float, float]:
        """The (rtol, atol) pair used for tensors of ``dtype``."""
        default_rtol, default_atol = _DEFAULT_TOLERANCES.get(dtype, (0.0, 0.0))
        return (
            default_rtol if self.rtol is None else self.rtol,
            default_atol if self.atol is None else self.atol,
        )


@dataclass(frozen=True)
class TensorSnapshot:
    """A tensor's metadata and a private copy of its values."""

    dtype: torch.dtype
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    storage_offset: int
    device: torch.device
    requires_grad: bool
    values: torch.Tensor

    @classmethod
    def of(cls, tensor: torch.Tensor) -> TensorSnapshot:
        """Copy ``tensor`` now; reading it later may see a replay's overwrite."""
        strided = tensor.layout == torch.strided
        return cls(
            dtype=tensor.dtype,
            shape=tuple(tensor.shape),
            stride=tuple(tensor.stride()) if strided else (),
            storage_offset=int(tensor.storage_offset()) if strided else 0,
            device=tensor.device,
            requires_grad=tensor.requires_grad,
            values=tensor.detach().clone(),
        )

    def significant_layout(self) -> tuple[tuple[int, ...], int]:
        """Strides and offset as far as they can be observed through the tensor.

        The stride of a dimension of size 1 is never used to address an
        element, and a tensor with no elements addresses none: torch's own
        stride checks (``check_significant_strides``) skip both, and so does
        the oracle. -1 stands for a stride or offset that means nothing.
        """
        return significant_layout(
            self.shape, self.stride, self.storage_offset, empty=not self.values.numel()
        )


def significant_layout(
    shape: tuple[int, ...], stride: tuple[int, ...], storage_offset: int, *, empty: bool
) -> tuple[tuple[int, ...], int]:
    """:meth:`TensorSnapshot.significant_layout` of a tensor of this metadata."""
    if empty:
        return tuple(-1 for _ in stride), -1
    strides = tuple(stride if size > 1 else -1 for size, stride in zip(shape, stride, strict=True))
    return strides, storage_offset


def layout_of(value: Any) -> tuple[tuple[int, ...], int] | None:
    """The significant layout of a strided tensor (read from its metadata, no copy);
    ``None`` for anything else."""
    if not isinstance(value, torch.Tensor) or value.layout != torch.strided:
        return None
    return significant_layout(
        tuple(value.shape),
        tuple(value.stride()),
        int(value.storage_offset()),
        empty=not value.numel(),
    )


def compare_iteration(
    eager: Any,
    compiled: Any,
    iteration: int,
    tolerance: Tolerance,
    excused: Collection[Place] = (),
) -> Difference | None:
    """First difference between the two sides' observations of one iteration, or ``None``.

    Values at an ``excused`` place are not compared (rounding explained them,
    see :mod:`~pytest_cgraph.oracle.rounding`); their metadata still is.
    """
    if compiled.error is not None:
        return crash_difference(compiled.error, compiled.traceback, iteration, compiled.phase)
    if eager.output_structure != compiled.output_structure:
        return Difference(
            Kind.METADATA,
            iteration,
            Place(Role.STRUCTURE),
            expected=eager.output_structure,
            actual=compiled.output_structure,
        )
    for index, (expected, actual) in enumerate(zip(eager.outputs, compiled.outputs, strict=True)):
        found = compare_values(expected, actual, tolerance, Kind.VALUE, check_layout=False)
        place = Place(Role.OUTPUT, index=index, argument=eager.output_arguments[index])
        if found is not None and not _excused(found, place, excused):
            return found.located(iteration, place)
    for index, (expected, actual) in enumerate(zip(eager.aliasing, compiled.aliasing, strict=True)):
        if expected != actual:
            return Difference(
                Kind.ALIASING,
                iteration,
                Place(Role.ALIASING, index=index),
                facet=_relations_facet(expected) + "_to_" + _relations_facet(actual),
                expected=describe_relations(expected),
                actual=describe_relations(actual),
            )
    if eager.argument_names != compiled.argument_names:
        # A module's parameters or buffers came and went differently.
        missing = [n for n in eager.argument_names if n not in compiled.argument_names]
        extra = [n for n in compiled.argument_names if n not in eager.argument_names]
        return Difference(
            Kind.METADATA,
            iteration,
            Place(Role.ARGUMENT, name=(missing or extra or eager.argument_names)[0]),
            detail="the arguments hold different tensors",
            facet="members",
            expected=", ".join(eager.argument_names),
            actual=", ".join(compiled.argument_names),
        )
    for name, expected, actual in zip(
        eager.argument_names, eager.arguments, compiled.arguments, strict=True
    ):
        # An argument that came in laid out differently on the two sides (an
        # earlier output fed back: output layouts are not compared) is judged
        # by whether the call changed its layout, not by its layout.
        entered = eager.layouts_in.get(name), compiled.layouts_in.get(name)
        alike = entered[0] == entered[1]
        found = compare_values(expected, actual, tolerance, Kind.MUTATION, check_layout=alike)
        if found is None and not alike:
            found = _layout_change(entered, expected, actual)
        place = Place(Role.ARGUMENT, name=name)
        if found is not None and not _excused(found, place, excused):
            return found.located(iteration, place)
    for name, expected in eager.grads.items():
        actual = compiled.grads.get(name)
        place = Place(Role.GRAD, name=name)
        if (expected is None) != (actual is None):
            return Difference(
                Kind.GRAD,
                iteration,
                place,
                facet="presence",
                expected=_brief_grad(expected),
                actual=_brief_grad(actual),
            )
        if expected is not None:
            found = compare_values(expected, actual, tolerance, Kind.GRAD, check_layout=False)
            if found is not None and not _excused(found, place, excused):
                return found.located(iteration, place, kind=Kind.GRAD)
    return None


def _excused(found: Difference, place: Place, excused: Collection[Place]) -> bool:
    """A value difference at an excused place; metadata differences are never excused."""
    return place in excused and found.kind is not Kind.METADATA


def crash_difference(
    error: BaseException, formatted_traceback: str, iteration: int, phase: str
) -> Difference:
    """The compiled side raised during ``phase`` of ``iteration``.

    torch wraps what went wrong inside a compiler (``BackendCompilerFailed``,
    Dynamo's own errors): the type and message that name the bug are the
    innermost ones, so the difference carries those, behind the wrapper's name.
    """
    names = [type(error).__name__]
    cause = error
    while (inner := _wrapped(cause)) is not None:
        cause = inner
        names.append(type(cause).__name__)
    return Difference(
        Kind.CRASH,
        iteration,
        Place(Role.COMPILED, name=phase),
        exception_type=".".join(names),
        message=str(cause) or "(no message)",
        traceback=formatted_traceback,
    )


def _wrapped(error: BaseException) -> BaseException | None:
    """The exception a compiler-stack wrapper carries, if ``error`` is one."""
    inner = getattr(error, "inner_exception", None)
    if isinstance(inner, BaseException):
        return inner
    if type(error).__module__.startswith("torch._dynamo") and error.__cause__ is not None:
        return error.__cause__
    return None


def _relations_facet(relations: tuple[Relation, ...]) -> str:
    return "_".join(sorted({relation.kind for relation in relations})) or "none"


def _brief_grad(grad: TensorSnapshot | None) -> str:
    return "None" if grad is None else f"tensor {_values_text(grad.values)}"


def _layout_change(entered: tuple[Any, Any], expected: Any, actual: Any) -> Difference | None:
    """A stride difference where one side's call changed an argument's layout and the
    other's did not; ``None`` where both kept it, or both changed it."""
    if not isinstance(expected, TensorSnapshot) or not isinstance(actual, TensorSnapshot):
        return None
    eager_changed = expected.significant_layout() != entered[0]
    compiled_changed = actual.significant_layout() != entered[1]
    if eager_changed == compiled_changed:
        return None
    return Difference(
        Kind.METADATA,
        0,
        Place(Role.OUTPUT),
        detail="stride differs: the call changed it on one side only",
        facet="stride",
        expected=str(expected.stride),
        actual=str(actual.stride),
    )


def compare_values(
    expected: Any, actual: Any, tolerance: Tolerance, value_kind: Kind, *, check_layout: bool
) -> Difference | None:
    """Compare one observed value; the result has no iteration or place yet.

    Metadata differences (dtype, shape, device, requires_grad, and with
    ``check_layout`` the significant strides and storage offset, see
    :meth:`TensorSnapshot.significant_layout`) are ``metadata``; differing
    values are ``value_kind``.
    """
    nowhere = Place(Role.OUTPUT)
    if isinstance(expected, TensorSnapshot) != isinstance(actual, TensorSnapshot):
        return Difference(
            Kind.METADATA,
            0,
            nowhere,
            facet="type",
            expected=_type_text(expected),
            actual=_type_text(actual),
        )
    if not isinstance(expected, TensorSnapshot):
        if _plain_equal(expected, actual):
            return None
        return Difference(value_kind, 0, nowhere, expected=repr(expected), actual=repr(actual))
    fields = [
        ("dtype", expected.dtype, actual.dtype),
        ("shape", expected.shape, actual.shape),
        ("device", expected.device, actual.device),
        ("requires_grad", expected.requires_grad, actual.requires_grad),
    ]
    if check_layout and expected.shape == actual.shape:
        (want_strides, want_offset), (got_strides, got_offset) = (
            expected.significant_layout(),
            actual.significant_layout(),
        )
        fields.append(("stride", want_strides, got_strides))
        fields.append(("storage_offset", want_offset, got_offset))
    for field_name, want, got in fields:
        if want != got:
            if field_name == "stride":
                want, got = expected.stride, actual.stride
            return Difference(
                Kind.METADATA,
                0,
                nowhere,
                detail=f"{field_name} differs",
                facet=field_name,
                expected=str(want),
                actual=str(got),
            )
    return value_difference(expected.values, actual.values, tolerance, value_kind)


def value_difference(
    expected: torch.Tensor, actual: torch.Tensor, tolerance: Tolerance, kind: Kind
) -> Difference | None:
    """Compare values of two same-shaped tensors as ``torch.testing.assert_close`` would."""
    same_kind = expected.dtype == actual.dtype and expected.device == actual.device
    if same_kind and torch.equal(expected, actual):
        return None  # equal is close at any tolerance; one op instead of isclose's several
    expected = expected.detach().cpu()
    actual = actual.detach().cpu()
    if expected.dtype.is_floating_point or expected.dtype.is_complex:
        rtol, atol = tolerance.for_dtype(compared_precision(expected, actual))
        close = torch.isclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True)
    else:
        close = actual == expected
    if bool(close.all()):
        return None
    mismatch = ~close
    wide_expected = _widen(expected)
    wide_actual = _widen(actual)
    abs_diff = (wide_actual - wide_expected).abs()
    abs_diff = torch.where(mismatch, abs_diff, torch.zeros_like(abs_diff))
    rel_diff = abs_diff / wide_expected.abs()  # inf where eager is 0
    first = tuple(int(i) for i in mismatch.nonzero()[0].tolist()) if mismatch.dim() else ()
    return Difference(
        kind,
        0,
        Place(Role.OUTPUT),
        detail=f"{int(mismatch.sum())} of {mismatch.numel()} elements differ",
        max_abs=_finite_max(abs_diff[mismatch]),
        max_rel=_finite_max(rel_diff[mismatch]),
        index=first,
        expected=_values_text(expected),
        actual=_values_text(actual),
    )


#: A double-precision dtype, and the single-precision one its values often come from.
_SINGLE_OF_DOUBLE = {torch.float64: torch.float32, torch.complex128: torch.complex64}


def compared_precision(expected: torch.Tensor, actual: torch.Tensor) -> torch.dtype:
    """The dtype whose tolerance two values are compared at: their own, except a
    double-precision pair whose every value single precision holds exactly.

    Such a pair was computed in single precision and converted (``x.double()``
    at the end of a float32 program): both sides carry single-precision
    rounding, and a last-bit difference of the float32 computation (a
    decomposition that rounds once more) is no more than float32's tolerance
    allows. A value computed in double precision is almost never exactly a
    float32 value on both sides, so its comparison stays at float64's.
    """
    single = _SINGLE_OF_DOUBLE.get(expected.dtype)
    if single is None or actual.dtype != expected.dtype:
        return expected.dtype
    if _held_exactly(expected, single) and _held_exactly(actual, single):
        return single
    return expected.dtype


def _held_exactly(tensor: torch.Tensor, dtype: torch.dtype) -> bool:
    """Whether every value of ``tensor`` survives a round trip through ``dtype``."""
    back = tensor.to(dtype).to(tensor.dtype)
    return bool(((back == tensor) | tensor.isnan()).all())


def _widen(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.to(torch.complex128 if tensor.dtype.is_complex else torch.float64)


def _finite_max(values: torch.Tensor) -> float:
    values = values.abs() if values.dtype.is_complex else values
    return float(values.nan_to_num(nan=math.inf, posinf=math.inf).max()) if values.numel() else 0.0


def _values_text(tensor: torch.Tensor) -> str:
    flat = tensor.reshape(-1)
    shown = flat[:_SHOWN_ELEMENTS].tolist()
    more = f" ... ({flat.numel()} elements)" if flat.numel() > _SHOWN_ELEMENTS else ""
    if tensor.dim() == 0:
        return repr(tensor.item())
    return f"{shown}{more}"


def _type_text(value: Any) -> str:
    if isinstance(value, TensorSnapshot):
        return f"tensor {value.dtype} {list(value.shape)}"
    return type(value).__name__


def _plain_equal(expected: Any, actual: Any) -> bool:
    try:
        return bool(expected == actual) and type(expected) is type(actual)
    except Exception:
        return False
