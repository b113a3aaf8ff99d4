"""What one side of a check did in one iteration, frozen so later calls cannot change it.

CUDA-graph replays overwrite their outputs in place, and programs mutate
their inputs, so everything is copied the moment it is observed. The raw
outputs are kept separately by the engine for the retained-output check.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from pytest_cgraph.oracle.cloning import (
    is_python_random,
    is_stateful_object,
    named_state,
    state_attributes,
    storage_key,
)
from pytest_cgraph.oracle.compare import TensorSnapshot
from pytest_cgraph.oracle.difference import Place, Relation, Role


def snapshot(value: Any) -> Any:
    """Snapshot a tensor or a ``random.Random``; other values (ints, None, strings)
    are kept as they are."""
    if isinstance(value, torch.Tensor):
        return TensorSnapshot.of(value)
    if is_python_random(value):
        return PythonRandomState(value.getstate())
    return value


@dataclass(frozen=True)
class PythonRandomState:
    """A ``random.Random`` argument seen by its state, which is what calls change.

    Two sides' objects are different objects: compared by state, a compiled
    call that replays a draw instead of making one (leaving the state where
    it was) shows as a difference. The repr names a digest of the state,
    not its 625 numbers.
    """

    state: tuple[Any, ...]

    def __repr__(self) -> str:
        digest = hashlib.sha1(repr(self.state).encode()).hexdigest()[:10]
        return f"random.Random(state {digest})"


@dataclass
class Observation:
    """One side, one iteration: outputs, arguments after the call, grads, aliasing.

    ``output_arguments`` names, per output, the argument it *is* (returned
    as itself), else ``None``. ``error`` is set when the call or the
    backward raised; ``phase`` says which, ``traceback`` keeps the stack.
    """

    outputs: list[Any] = field(default_factory=list)
    output_arguments: list[str | None] = field(default_factory=list)
    output_structure: str = ""
    arguments: list[Any] = field(default_factory=list)
    argument_names: list[str] = field(default_factory=list)
    #: Each tensor argument's significant layout before the call, by name.
    layouts_in: dict[str, Any] = field(default_factory=dict)
    grads: dict[str, TensorSnapshot | None] = field(default_factory=dict)
    aliasing: list[tuple[Relation, ...]] = field(default_factory=list)
    error: BaseException | None = None
    phase: str = ""
    traceback: str = ""
    #: The type of what the call returned, for a message about it.
    returned: str = ""


def observed_arguments(flat_args: Sequence[Any], names: Sequence[str]) -> list[tuple[str, Any]]:
    """The argument values to observe, by name: each module or optimizer expanded into
    the tensors it holds (``net.lin.weight``), every other argument as itself."""
    observed: list[tuple[str, Any]] = []
    for name, value in zip(names, flat_args, strict=True):
        if is_stateful_object(value):
            observed.extend(named_state(name, value))
        elif state_attributes(value) is not None:
            observed.extend(object_state(name, value))
        else:
            observed.append((name, value))
    return observed


#: Attribute values compared by value: what ``==`` means the same on both sides.
_PLAIN_DATA = (bool, int, float, complex, str, bytes, type(None))


def object_state(name: str, value: Any) -> list[tuple[str, Any]]:
    """An object's declared state (:func:`cloning.state_attributes`) by path
    (``h1.count``), as comparable values.

    Numbers, strings and tensors are themselves; lists and tuples of numbers
    and strings are frozen as tuples. Any other object cannot be compared
    across sides (each side has its own copy), so it is named by which of the
    object's other attributes hold that same object: ``h1.state`` reads
    ``<the object h1.on holds>`` when the state is the ``on`` sentinel.
    """
    declared = state_attributes(value) or ()
    everything = vars(value)
    state: list[tuple[str, Any]] = []
    for attribute in declared:
        path = f"{name}.{attribute}"
        held = everything.get(attribute, _MISSING)
        if held is _MISSING:
            state.append((path, "<no such attribute>"))
        elif isinstance(held, (torch.Tensor, *_PLAIN_DATA)):
            state.append((path, held))
        elif isinstance(held, (list, tuple)) and all(isinstance(i, _PLAIN_DATA) for i in held):
            state.append((path, tuple(held)))
        else:
            others = [f"{name}.{a}" for a, v in everything.items() if v is held and a != attribute]
            state.append(
                (
                    path,
                    f"<the object {', '.join(others)} holds>"
                    if others
                    else "<an object of its own>",
                )
            )
    return state


_MISSING = object()


def describe_aliasing(
    outputs: Sequence[Any], arguments: Sequence[tuple[str, Any]]
) -> list[tuple[Relation, ...]]:
    """For each output, which arguments and earlier outputs it is, or shares memory with.

    Identity (the same tensor object returned twice, or an argument returned
    as itself) is kept apart from storage sharing, since compiled code must
    preserve both.
    """
    relations: list[tuple[Relation, ...]] = []
    for index, out in enumerate(outputs):
        if not isinstance(out, torch.Tensor):
            relations.append(())
            continue
        key = storage_key(out)
        found: list[Relation] = []
        others = [(Place(Role.ARGUMENT, name=name), arg) for name, arg in arguments]
        others += [(Place(Role.OUTPUT, index=i), outputs[i]) for i in range(index)]
        for target, other in others:
            if not isinstance(other, torch.Tensor):
                continue
            if other is out:
                found.append(Relation("is", target))
            elif key is not None and storage_key(other) == key:
                found.append(Relation("shares", target))
        relations.append(tuple(found))
    return relations
