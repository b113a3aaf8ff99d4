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

from pytest_cgraph.oracle.cloning import storage_key
from pytest_cgraph.oracle.compare import TensorSnapshot
from pytest_cgraph.oracle.difference import Place, Relation, Role
from pytest_cgraph.oracle.graphs import (
    held_state,
    is_python_random,
    is_stateful_object,
    named_state,
    state_attributes,
)
from pytest_cgraph.oracle.sides import carried_arguments


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
    the tensors it holds (``net.lin.weight``) and an optimizer's group settings
    (``opt.param_groups[0].lr``), an object copied with its side's graph
    (:func:`sides.carried_arguments`) into the state it holds
    (``trainer.net.weight``, ``scaler._scale``), every other argument as itself.

    What one argument shows is not shown again through another: a module
    passed itself and held by an EMA helper is observed by its own name. A
    copied object is never compared as itself (each side has its own, and
    it equals only itself); what it holds is, found afresh each time (a
    call may replace a tensor an object holds). Whether an argument is such
    an object was decided when it was copied: an argument passed through
    (a tokenizer) is never walked here.
    """
    carried = carried_arguments(flat_args)
    seen = _Shown(flat_args)
    observed: list[tuple[str, Any]] = []
    for index, (name, value) in enumerate(zip(names, flat_args, strict=True)):
        if is_stateful_object(value):
            observed.extend(_stateful_state(name, value))
        elif index in carried:
            for path, held in held_state(name, value, seen):
                if is_stateful_object(held):
                    if isinstance(held, torch.nn.Module):
                        seen.update(id(t) for t in (*held.parameters(), *held.buffers()))
                    observed.extend(_stateful_state(path, held))
                elif state_attributes(held) is not None:
                    observed.extend(object_state(path, held))
                else:
                    observed.append((path, held))
        elif state_attributes(value) is not None:
            observed.extend(object_state(name, value))
        else:
            observed.append((name, value))
    return observed


class _Shown(set[int]):
    """The ids of what the arguments show by themselves: tensors, modules and
    optimizers, and the tensors of a module argument, which are listed only
    once asked about something else (a held tensor). A scheduler's walk
    meets only its optimizer, an argument itself: a model's hundred modules
    are then never walked to list their parameters, on each of a call's
    observations."""

    def __init__(self, flat_args: Sequence[Any]) -> None:
        super().__init__(
            id(value)
            for value in flat_args
            if isinstance(value, torch.Tensor) or is_stateful_object(value)
        )
        self._modules = [value for value in flat_args if isinstance(value, torch.nn.Module)]

    def __contains__(self, key: object) -> bool:
        if super().__contains__(key):
            return True
        if not self._modules:
            return False
        modules, self._modules = self._modules, []
        self.update(id(t) for module in modules for t in (*module.parameters(), *module.buffers()))
        return super().__contains__(key)


def _stateful_state(name: str, value: Any) -> list[tuple[str, Any]]:
    """A module's or optimizer's observed state: its tensors, and an optimizer's
    group settings."""
    state: list[tuple[str, Any]] = list(named_state(name, value))
    if isinstance(value, torch.optim.Optimizer):
        state.extend(optimizer_settings(name, value))
    return state


def optimizer_settings(name: str, optimizer: torch.optim.Optimizer) -> list[tuple[str, Any]]:
    """An optimizer's numeric group settings, by path (``opt.param_groups[0].lr``).

    A learning-rate schedule writes them (``lr``, a cycle's ``momentum`` or
    ``betas``); a compiled step that loses a scheduler's write leaves them
    where they were, which only shows in the parameters a call later (and
    after the last call, never). Numbers are observed as float64 scalars,
    compared at float64's tolerance (a schedule computed in the graph, from
    a float Dynamo did not specialize, may round its last bit otherwise),
    and an int and a float of one value are alike. Flags (``foreach``,
    ``capturable``, which Dynamo sets on a CUDA step of its own) are not
    settings a step computes, and are left out.
    """
    settings: list[tuple[str, Any]] = []
    for index, group in enumerate(optimizer.param_groups):
        for key, held in group.items():
            path = f"{name}.param_groups[{index}].{key}"
            if isinstance(held, torch.Tensor):
                settings.append((path, held))
            elif isinstance(held, (int, float)) and not isinstance(held, bool):
                settings.append((path, torch.tensor(float(held), dtype=torch.float64)))
            elif (
                isinstance(held, tuple)
                and held
                and all(isinstance(i, (int, float)) and not isinstance(i, bool) for i in held)
            ):
                settings.append((path, torch.tensor(held, dtype=torch.float64)))
    return settings


#: Attribute values compared by value: what ``==`` means the same on both sides.
_PLAIN_DATA = (bool, int, float, complex, str, bytes, type(None))


def object_state(name: str, value: Any) -> list[tuple[str, Any]]:
    """An object's declared state (:func:`graphs.state_attributes`) by path
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
