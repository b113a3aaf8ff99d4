"""Judge two observations: the first observable difference, or ``None``.

The order of checks is the order in which a difference is most useful to a
reader: a crash, then what the call returned, how it aliased, what it did to
its arguments, and finally what backward left in ``.grad``.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
from typing import Any

import torch

from pytest_cgraph.observe import Observation, TensorSnapshot

VALUE = "value"
MUTATION = "mutation"
GRAD = "grad"
ALIASING = "aliasing"
METADATA = "metadata"
STALE_OUTPUT = "stale output"
CRASH = "crash"
TIMEOUT = "timeout"

#: Every failure kind, for reports and validation.
KINDS = (VALUE, MUTATION, GRAD, ALIASING, METADATA, STALE_OUTPUT, CRASH, TIMEOUT)

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
class Difference:
    """The first observable difference between eager and compiled.

    ``place`` names where: ``output #i``, ``argument x``, ``grad of x``,
    ``aliasing of output #i``. ``iteration`` counts calls from 1.
    """

    kind: str
    iteration: int
    place: str
    detail: str = ""
    max_abs: float | None = None
    max_rel: float | None = None
    index: tuple[int, ...] | None = None
    expected: str | None = None
    actual: str | None = None
    exception_type: str | None = None

    @property
    def signature(self) -> str:
        """Kind + place + exception type: equal for failures that are the same bug.

        The place is taken without indices and argument names (``output #2``
        is ``output``, ``argument a1`` is ``argument``, ``grad of p0`` is
        ``grad``): one broken replay path shows in whichever output or
        argument a program happens to have, and must not count as many bugs.
        """
        place = re.sub(r"\bargument [^\s,)]+", "argument", self.place)
        place = re.sub(r"\bgrad of [^\s,)]+", "grad", place)
        place = re.sub(r"#?\d+", "", place)
        parts = [self.kind, place]
        if self.exception_type:
            parts.append(self.exception_type)
        return "-".join(re.sub(r"[^A-Za-z0-9]+", "_", p).strip("_") for p in parts)

    def located(self, iteration: int, place: str, kind: str | None = None) -> Difference:
        """This difference, placed at ``iteration`` and ``place`` (and re-kinded)."""
        return dataclasses.replace(self, iteration=iteration, place=place, kind=kind or self.kind)

    @property
    def ends_process(self) -> bool:
        """A hang or a dead process: re-running it here would hang or kill this process."""
        return self.kind == TIMEOUT or (self.kind == CRASH and self.place == "process")

    def describe(self) -> str:
        """The message of :class:`~pytest_cgraph.EquivalenceError`."""
        if self.iteration == 0:  # a hang or a dead process: no iteration is known
            return f"{self.kind} of the {self.place}: {self.detail}"
        lines = [f"{self.kind} difference at iteration {self.iteration}, {self.place}"]
        if self.detail:
            lines.append(self.detail)
        if self.max_abs is not None:
            lines.append(
                f"largest abs difference {self.max_abs:.6g}, largest rel difference "
                f"{self.max_rel:.6g}, first differing index {self.index}"
            )
        if self.expected is not None:
            lines.append(f"eager:    {self.expected}")
            lines.append(f"compiled: {self.actual}")
        return "\n".join(lines)


def compare_iteration(
    eager: Observation, compiled: Observation, iteration: int, tolerance: Tolerance
) -> Difference | None:
    """First difference between the two sides of one iteration, or ``None``."""
    if compiled.error is not None:
        return Difference(
            CRASH,
            iteration,
            f"compiled {compiled.phase}",
            detail=crash_detail(compiled.error, compiled.traceback),
            exception_type=type(compiled.error).__name__,
        )
    if eager.output_structure != compiled.output_structure:
        return Difference(
            METADATA,
            iteration,
            "returned structure",
            expected=eager.output_structure,
            actual=compiled.output_structure,
        )
    for name, expected, actual in zip(
        eager.output_names, eager.outputs, compiled.outputs, strict=True
    ):
        found = compare_values(expected, actual, tolerance, VALUE, check_layout=False)
        if found is not None:
            return found.located(iteration, name)
    for index, (expected, actual) in enumerate(zip(eager.aliasing, compiled.aliasing, strict=True)):
        if expected != actual:
            return Difference(
                ALIASING,
                iteration,
                f"aliasing of output #{index}",
                expected=expected or "aliases nothing",
                actual=actual or "aliases nothing",
            )
    for name, expected, actual in zip(
        eager.argument_names, eager.arguments, compiled.arguments, strict=True
    ):
        found = compare_values(expected, actual, tolerance, MUTATION, check_layout=True)
        if found is not None:
            return found.located(iteration, f"argument {name}")
    for name, expected in eager.grads.items():
        actual = compiled.grads.get(name)
        if (expected is None) != (actual is None):
            return Difference(
                GRAD,
                iteration,
                f"grad of {name}",
                expected=_brief_grad(expected),
                actual=_brief_grad(actual),
            )
        if expected is not None:
            found = compare_values(expected, actual, tolerance, GRAD, check_layout=False)
            if found is not None:
                return found.located(iteration, f"grad of {name}", kind=GRAD)
    return None


def crash_detail(error: BaseException, formatted_traceback: str) -> str:
    """The exception in one line, then its traceback for whoever needs the depth."""
    return f"{type(error).__name__}: {error}\n{formatted_traceback.rstrip()}"


def _brief_grad(grad: TensorSnapshot | None) -> str:
    return "None" if grad is None else f"tensor {_values_text(grad.values)}"


def compare_values(
    expected: Any, actual: Any, tolerance: Tolerance, value_kind: str, *, check_layout: bool
) -> Difference | None:
    """Compare one observed value; the result has no iteration or place yet.

    Metadata differences (dtype, shape, device, requires_grad, and with
    ``check_layout`` strides and storage offset) are ``metadata``; differing
    values are ``value_kind``.
    """
    if isinstance(expected, TensorSnapshot) != isinstance(actual, TensorSnapshot):
        return Difference(METADATA, 0, "", expected=_type_text(expected), actual=_type_text(actual))
    if not isinstance(expected, TensorSnapshot):
        if _plain_equal(expected, actual):
            return None
        return Difference(value_kind, 0, "", expected=repr(expected), actual=repr(actual))
    fields = ["dtype", "shape", "device", "requires_grad"]
    if check_layout:
        fields += ["stride", "storage_offset"]
    for field_name in fields:
        want, got = getattr(expected, field_name), getattr(actual, field_name)
        if want != got:
            return Difference(
                METADATA, 0, "", detail=f"{field_name} differs", expected=str(want), actual=str(got)
            )
    return value_difference(expected.values, actual.values, tolerance, value_kind)


def value_difference(
    expected: torch.Tensor, actual: torch.Tensor, tolerance: Tolerance, kind: str
) -> Difference | None:
    """Compare values of two same-shaped tensors as ``torch.testing.assert_close`` would."""
    expected = expected.detach().cpu()
    actual = actual.detach().cpu()
    if expected.dtype.is_floating_point or expected.dtype.is_complex:
        rtol, atol = tolerance.for_dtype(expected.dtype)
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
        "",
        detail=f"{int(mismatch.sum())} of {mismatch.numel()} elements differ",
        max_abs=_finite_max(abs_diff[mismatch]),
        max_rel=_finite_max(rel_diff[mismatch]),
        index=first,
        expected=_values_text(expected),
        actual=_values_text(actual),
    )


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
