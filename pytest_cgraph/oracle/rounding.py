"""Whether a floating difference is rounding the program amplified, judged against float64.

Compiled code may round differently from eager (a decomposed batch norm, a
fused kernel): a last-bit difference, which the per-dtype tolerance absorbs.
Some programs amplify it past any tolerance: Adam divides a gradient by its
own magnitude, so the bias of a layer followed by a batch norm — whose true
gradient is zero and whose computed one is rounding noise — moves by ``±lr``
either way. Neither side is wrong: both are as far from the exact answer.

So, as PyTorch's own accuracy checks do (``torch._dynamo.utils.same`` with
an ``fp64_ref``), a floating difference counts only if the compiled value is
further from a float64 run of eager than eager's own value is: more than
twice eager's error plus the dtype's ``atol``. The float64 run is eager
again, from fresh copies of the arguments converted to float64, with
float64 as the default dtype. Where it cannot stand for the exact answer
the difference stands: arguments that alias or are views (converting them
would break the aliasing a compiler must keep), non-leaf arguments, a
program that draws random numbers (float64 draws other numbers), or a
reference that raised, differs in structure, or is not finite.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from pytest_cgraph.oracle.cloning import storage_key
from pytest_cgraph.oracle.compare import TensorSnapshot, Tolerance
from pytest_cgraph.oracle.difference import Difference, Kind, Place, Role

#: How much further from float64 than eager the compiled value may be
#: (``torch._dynamo.utils.same``'s multiplier for float32).
ERROR_MULTIPLIER = 2.0

#: Kinds of difference rounding can explain: values, never metadata or a crash.
ROUNDING_KINDS = frozenset({Kind.VALUE, Kind.MUTATION, Kind.GRAD})


def may_be_rounding(difference: Difference, eager_value: Any) -> bool:
    """Whether ``difference`` is of a kind and dtype that rounding can explain."""
    return (
        difference.kind in ROUNDING_KINDS
        and not difference.facet
        and isinstance(eager_value, TensorSnapshot)
        and eager_value.dtype.is_floating_point
        and eager_value.dtype != torch.float64
    )


def value_at(observation: Any, place: Place) -> Any:
    """The snapshot ``observation`` holds at ``place``, or ``None`` if it has none there."""
    if place.role is Role.OUTPUT and place.index is not None:
        outputs = observation.outputs
        return outputs[place.index] if place.index < len(outputs) else None
    if place.role is Role.ARGUMENT and place.name in observation.argument_names:
        return observation.arguments[observation.argument_names.index(place.name)]
    if place.role is Role.GRAD:
        return observation.grads.get(place.name)
    return None


def to_float64(flat: Sequence[Any]) -> bool:
    """Convert one side's freshly cloned arguments to float64 in place; ``False``
    (and nothing reliable) when they cannot stand for the program's exact run.

    Tensors keep their identity, leaf-ness, ``requires_grad`` and hooks
    (``.data`` is replaced, as ``Module.double()`` does); modules are
    converted with ``double()``, an optimizer's state tensors one by one.
    """
    tensors = [value for value in flat if isinstance(value, torch.Tensor)]
    storages = [storage_key(t) for t in tensors if t.numel()]
    if any(t._is_view() or (t.requires_grad and not t.is_leaf) for t in tensors) or len(
        storages
    ) != len(set(storages)):
        return False
    for value in flat:
        if isinstance(value, torch.nn.Module):
            value.double()
        elif isinstance(value, torch.optim.Optimizer):
            for state in value.state.values():
                for key, held in state.items():
                    if isinstance(held, torch.Tensor) and _narrow_float(held):
                        state[key] = held.double()
        elif isinstance(value, torch.Tensor) and _narrow_float(value):
            grad = value.grad
            value.data = value.data.double()
            if grad is not None:
                value.grad = grad.double()
    return True


def explained_by_rounding(
    place: Place, eager: Any, compiled: Any, reference: Any, tolerance: Tolerance
) -> bool:
    """Whether the difference at ``place`` is rounding: compiled is no further from
    the float64 ``reference`` observation than :data:`ERROR_MULTIPLIER` times
    eager's error plus the dtype's ``atol``."""
    expected, actual, exact = (value_at(side, place) for side in (eager, compiled, reference))
    if not all(isinstance(v, TensorSnapshot) for v in (expected, actual, exact)):
        return False
    if not expected.shape == actual.shape == exact.shape:
        return False
    wide = [v.values.detach().cpu().to(torch.float64) for v in (expected, actual, exact)]
    if not all(bool(torch.isfinite(v).all()) for v in wide):
        return False
    if not wide[2].numel():
        return False
    eager_error = float((wide[0] - wide[2]).abs().max())
    compiled_error = float((wide[1] - wide[2]).abs().max())
    _, atol = tolerance.for_dtype(expected.dtype)
    return compiled_error <= ERROR_MULTIPLIER * eager_error + atol


def _narrow_float(tensor: torch.Tensor) -> bool:
    return tensor.dtype.is_floating_point and tensor.dtype != torch.float64
