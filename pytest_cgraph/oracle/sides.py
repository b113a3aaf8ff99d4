"""One side's copies of a program's arguments, as one object graph.

Each side of a check gets its own copy of the arguments: shared, the eager
side's update would be where the compiled side starts. Tensors are copied
with their aliasing (:mod:`cloning`), and so are modules and optimizers: a
module deep-copied (parameter sharing, buffers, grads, training mode kept),
an optimizer rebound to its side's copies of the parameters.

And so is everything else that refers to what is copied (:mod:`graphs`
finds what): a learning-rate scheduler steps its side's optimizer, a
``GradScaler`` scales its side's loss, an object holding a module (an EMA
helper, a trainer) holds its side's module, and a hook or a closure over a
module or a tensor reaches its side's. Everything is copied through one
memo, so two arguments that refer to one object refer to one copy of it.
The graph is walked once per call's arguments (:class:`ObjectGraph`), and
what it decided travels with the copies (:class:`ArgumentCopies`): a check
observes them several times a call and never walks an argument again to
know how.
"""

from __future__ import annotations

import copy
import copyreg
import types
import weakref
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from typing import Any

import torch

from pytest_cgraph.oracle.cloning import (
    carry_over_hooks,
    clone_alone,
    clone_preserving_aliases,
    is_host_scalar,
    is_on_device,
    replace_memory,
    storage_key,
    storage_on,
    tensor_over,
)
from pytest_cgraph.oracle.errors import CgraphError, ConfigurationError
from pytest_cgraph.oracle.graphs import (
    STATE_ATTRIBUTES,
    ObjectGraph,
    held_state,
    holds_nothing,
    holds_per_side_state,
    is_per_side_state,
    state_attributes,
)

#: What :class:`SideCopier` copies as itself, as ``copy.deepcopy`` does (and a
#: Python module, which deepcopy cannot copy and every side shares).
_COPIED_AS_ITSELF: frozenset[type] = frozenset(
    {
        type(None),
        type(Ellipsis),
        type(NotImplemented),
        int,
        float,
        bool,
        complex,
        bytes,
        str,
        types.CodeType,
        type,
        range,
        types.BuiltinFunctionType,
        types.FunctionType,
        property,
        types.ModuleType,
    }
)


class _ClosureLeftBehind(CgraphError, copy.Error):
    """An object's own ``__deepcopy__`` would copy a closure over per-side state as
    itself: the copy would call the caller's objects."""

    def __init__(self, owner: Any, closure: types.FunctionType) -> None:
        super().__init__(f"{type(owner).__name__}'s own __deepcopy__")
        self.owner = owner
        self.closure = closure


def _emulates_default_deepcopy(value: Any) -> bool:
    """Whether ``value``'s ``__deepcopy__`` is the one torch's parametrizations put on
    a module whose class had none, which emulates the default deep copy
    (a new object, its ``__dict__`` and slots deep-copied): the copier then
    copies it that way itself, and rebuilds the closures it holds (a hook
    over the module) where that ``__deepcopy__`` would keep the caller's."""
    cls = type(value)
    return (
        "__deepcopy__" in cls.__dict__
        and isinstance(value, torch.nn.Module)
        and torch.nn.utils.parametrize.is_parametrized(value)
        and not hasattr(cls.__mro__[1], "__deepcopy__")
    )


class SideCopier:
    """``copy.deepcopy`` for one side's object graph, through one memo, except for
    closures over per-side state, which it rebuilds over copied cells, and
    weak references to what it copies, which refer to the copies.

    A deep copy copies a function as itself, so a hook or a closure over a
    module would keep calling the caller's module; and from Python 3.14 on,
    ``copy.deepcopy`` returns a function before it reads the memo, so no
    memo entry can stand a rebuilt closure in. This copier therefore walks
    the graph itself, by deepcopy's own protocol (``__deepcopy__``,
    ``copyreg``, ``__reduce_ex__(4)``), and differs from it only there. An
    object with a ``__deepcopy__`` of its own (a tensor) copies what it holds
    with ``copy.deepcopy`` through the same memo; one whose own copy would
    leave a closure over per-side state as it is (an FX ``GraphModule`` with
    such a hook) cannot be copied per side, and says so
    (:class:`_ClosureLeftBehind`), rather than have the copy call the
    caller's objects.
    """

    def __init__(self, memo: dict[Any, Any], graph: ObjectGraph) -> None:
        self.memo = memo
        self._graph = graph
        self._closures = graph.closures()
        self._alive: list[Any] = memo.setdefault(id(memo), [])

    def copy(self, value: Any) -> Any:
        """This side's copy of ``value``."""
        key = id(value)
        cls = type(value)
        if cls in _COPIED_AS_ITSELF:
            if cls is types.FunctionType and key in self._closures:
                return self.memo[key] if key in self.memo else self._function(value)
            return value
        if key in self.memo:
            return self.memo[key]
        if cls is weakref.ref:
            return self._weak(value)
        if issubclass(cls, type):
            return value
        if cls is list:
            listed: list[Any] = []
            self._remember(value, listed)
            listed.extend(self.copy(item) for item in value)
            return listed
        if cls is dict:
            mapping: dict[Any, Any] = {}
            self._remember(value, mapping)
            for k, v in value.items():
                mapping[self.copy(k)] = self.copy(v)
            return mapping
        if cls is tuple:
            items = [self.copy(item) for item in value]
            if key in self.memo:  # the tuple was reached again through its items
                return self.memo[key]
            twin: Any = (
                value if all(a is b for a, b in zip(items, value, strict=True)) else tuple(items)
            )
        elif cls is types.MethodType:
            twin = cls(self.copy(value.__func__), self.copy(value.__self__))
        elif isinstance(value, torch.Tensor) and value.requires_grad and not value.is_leaf:
            # An activation held by an object: deepcopy refuses a non-leaf;
            # copied as an argument would be (a non-leaf over new memory).
            twin = clone_alone(value, None)
        elif isinstance(value, torch.optim.Optimizer) or _emulates_default_deepcopy(value):
            twin = self._by_attributes(value)
        elif (own := getattr(value, "__deepcopy__", None)) is not None:
            if not isinstance(value, torch.Tensor):
                closure = self._graph.closure_in(value)
                if closure is not None:
                    raise _ClosureLeftBehind(value, closure)
            twin = own(self.memo)
        else:
            twin = self._reconstructed(value)
        if twin is not value:
            self._remember(value, twin)
        return twin

    def _remember(self, original: Any, twin: Any) -> None:
        """Map ``original`` to ``twin``, keeping ``original`` alive while the memo is
        (its id must not be reused by another object meanwhile), as deepcopy does."""
        self.memo[id(original)] = twin
        self._alive.append(original)

    def _weak(self, value: weakref.ref[Any]) -> Any:
        """A weak reference to what this side copies refers to the copy, whether the
        copy was made before or is made now (the order the graph is met in
        must not decide); any other stays the caller's, as deepcopy leaves
        every one."""
        referent = value()
        if referent is None:
            return value
        if id(referent) not in self.memo and self._graph.copied(referent):
            self.copy(referent)
            if id(value) in self.memo:  # the referent holds this weak reference
                return self.memo[id(value)]
        if id(referent) not in self.memo:
            return value
        twin = weakref.ref(self.memo[id(referent)], value.__callback__)
        self._remember(value, twin)
        return twin

    def _by_attributes(self, value: Any) -> Any:
        """``value`` copied with all its attributes and slots, not those its
        ``__getstate__`` keeps for pickling.

        An optimizer pickles only its settings and state: its hooks, and the
        patch a learning-rate scheduler puts on its ``step`` (which tells the
        scheduler the optimizer stepped first, and holds the optimizer
        weakly), would be left behind, and the copy's scheduler would warn on
        its first step that ``optimizer.step()`` was overridden. A
        parametrized module is copied so too, as its own ``__deepcopy__``
        does (:func:`_emulates_default_deepcopy`).
        """
        cls: Any = type(value)
        twin = cls.__new__(cls)
        self._remember(value, twin)
        twin.__dict__.update(self.copy(value.__dict__))
        for slot in copyreg._slotnames(cls):  # type: ignore[attr-defined]
            if hasattr(value, slot):
                setattr(twin, slot, self.copy(getattr(value, slot)))
        return twin

    def _reconstructed(self, value: Any) -> Any:
        reductor = copyreg.dispatch_table.get(type(value))
        if reductor is not None:
            reduced = reductor(value)
        elif (by_protocol := getattr(value, "__reduce_ex__", None)) is not None:
            reduced = by_protocol(4)
        elif (plain := getattr(value, "__reduce__", None)) is not None:
            reduced = plain()
        else:
            raise copy.Error(f"un(deep)copyable object of type {type(value)}")
        if isinstance(reduced, str):
            return value
        if not 2 <= len(reduced) <= 6:
            raise copy.Error(
                f"{type(value).__name__}'s __reduce_ex__ gave {len(reduced)} elements, "
                f"where pickle defines 2 to 6"
            )
        return self._reconstruct(value, *reduced)

    def _reconstruct(
        self,
        value: Any,
        make: Any,
        args: tuple[Any, ...],
        state: Any = None,
        items: Iterator[Any] | None = None,
        pairs: Iterator[tuple[Any, Any]] | None = None,
        set_state: Callable[[Any, Any], Any] | None = None,
    ) -> Any:
        """The copy a reduce tuple describes, as pickle reads it: a sixth element
        is a state setter, called instead of ``__setstate__`` (pickle's
        protocol since Python 3.8; ``copy.deepcopy`` rejects the tuple)."""
        twin = make(*(self.copy(arg) for arg in args))
        self._remember(value, twin)
        if state is not None:
            state = self.copy(state)
            if set_state is not None:
                set_state(twin, state)
            elif hasattr(twin, "__setstate__"):
                twin.__setstate__(state)
            else:
                slots = None
                if isinstance(state, tuple) and len(state) == 2:
                    state, slots = state
                if state is not None:
                    twin.__dict__.update(state)
                for name, held in (slots or {}).items():
                    setattr(twin, name, held)
        for item in items or ():
            twin.append(self.copy(item))
        for k, v in pairs or ():
            twin[self.copy(k)] = self.copy(v)
        return twin

    def _function(self, function: types.FunctionType) -> types.FunctionType:
        """``function`` over this side's copies of what it closes over.

        Its cells are made empty first and the rebuilt function remembered,
        then the cells filled: a closure that reaches itself (a recursive
        helper, a hook over the module it is registered on) reaches its copy.
        A cell two closures share stays shared between their copies.
        """
        originals = function.__closure__ or ()
        cells = []
        fresh = []
        for cell in originals:
            if id(cell) not in self.memo:
                self._remember(cell, types.CellType())
                fresh.append(cell)
            cells.append(self.memo[id(cell)])
        twin = types.FunctionType(
            function.__code__,
            function.__globals__,
            function.__name__,
            None,
            tuple(cells) if function.__closure__ is not None else None,
        )
        self._remember(function, twin)
        twin.__qualname__ = function.__qualname__
        twin.__module__ = function.__module__
        twin.__doc__ = function.__doc__
        twin.__annotations__ = function.__annotations__
        twin.__defaults__ = self.copy(function.__defaults__)
        twin.__kwdefaults__ = self.copy(function.__kwdefaults__)
        twin.__dict__.update(self.copy(function.__dict__))
        for cell in fresh:
            try:
                held = cell.cell_contents
            except ValueError:  # empty: its copy stays empty
                continue
            self.memo[id(cell)].cell_contents = self.copy(held)
        return twin


class ArgumentCopies(list[Any]):
    """One side's copies of a program's flat arguments, with what copying decided.

    ``carried``: the positions of the arguments copied with their graph and
    observed by what they hold (a scheduler, an EMA helper, a closure), as
    opposed to those observed as themselves. ``originals``: the caller's
    objects the copies were made from, by id (held, so that an id names one
    object while the copies live), so that nothing meant for a side's
    copies (the float64 run's conversion) touches one of them where a copy
    shares it. Decided once per copy, from one walk of the graph:
    observing the arguments, several times a call, walks no argument that
    holds nothing per side (a tokenizer of a million entries).
    """

    def __init__(
        self,
        values: Iterable[Any],
        carried: Collection[int] = (),
        originals: Mapping[int, Any] | None = None,
    ) -> None:
        super().__init__(values)
        self.carried = frozenset(carried)
        self.originals: Mapping[int, Any] = originals if originals is not None else {}


def _observed_by_what_it_holds(value: Any) -> bool:
    """An argument that, copied, is observed by what it holds: none of the kinds
    observed as themselves (tensors, modules, optimizers, ``random.Random``,
    declared objects)."""
    return not holds_nothing(value) and not is_per_side_state(value)


def carried_arguments(flat: Sequence[Any]) -> frozenset[int]:
    """The positions of the arguments in ``flat`` that are observed by what they
    hold: as :func:`clone_arguments` decided, or, for arguments it did not
    copy (a test's own list), decided now by walking them."""
    if isinstance(flat, ArgumentCopies):
        return flat.carried
    return frozenset(
        index
        for index, value in enumerate(flat)
        if _observed_by_what_it_holds(value) and holds_per_side_state(value)
    )


def following_copies(previous: Sequence[Any], following: Iterable[Any]) -> ArgumentCopies:
    """The arguments a program's ``advance`` gave for its next call, with what was
    decided for ``previous`` kept for the objects it gives again; only an
    object it did not have before is walked."""
    values = list(following)
    carried = carried_arguments(previous)
    kept = {id(previous[index]) for index in carried}
    had = {id(value) for value in previous}
    originals = previous.originals if isinstance(previous, ArgumentCopies) else None
    return ArgumentCopies(
        values,
        [
            index
            for index, value in enumerate(values)
            if id(value) in kept
            or (
                id(value) not in had
                and _observed_by_what_it_holds(value)
                and holds_per_side_state(value)
            )
        ],
        originals,
    )


def clone_arguments(
    values: Sequence[Any],
    device: torch.device | None = None,
    names: Sequence[str] | None = None,
    graph: ObjectGraph | None = None,
) -> ArgumentCopies:
    """One side's copies of a program's flat arguments, as one object graph.

    Tensors are copied first (aliasing between them kept); everything else
    that is copied is then copied through one memo that already maps each
    tensor argument (and its memory) to its copy: modules and optimizers (a
    parameter passed both inside its module and on its own stays one
    tensor, an optimizer's parameters are its side's copies of the
    module's), a ``random.Random`` with its state, an object that declares
    its state (:func:`state_attributes`), and any other argument that refers
    to per-side state (:func:`holds_per_side_state`): a scheduler then steps
    this side's optimizer, a closure calls this side's module. Other values
    pass through. ``graph`` is the arguments' :class:`ObjectGraph` where the
    caller has it (both sides of a call are copied from one walk).

    With ``device`` set, what the copied objects hold goes there as the
    arguments do: their modules, tensors and an optimizer's state, 0-dim CPU
    tensors outside modules (a scheduler's learning rates, an optimizer's
    step count) staying on the host (:func:`_place_held`).

    An argument that cannot be copied fails the check in one line naming it
    (``names`` name the arguments; :class:`ConfigurationError`) — unless
    all it leads to is its own (:meth:`ObjectGraph.owns_alone`: a constant
    tensor beside a lock, no module, optimizer or scaler, nothing another
    argument holds). Such an object is passed to both sides as it is, as
    before copies were made of object graphs: sharing it splits nothing
    between a copy and an original, because nothing else a side has refers
    to what it holds, and refusing it would fail a check that ran before.
    """
    graph = graph if graph is not None else ObjectGraph(values)
    copies = clone_preserving_aliases(values, device, carry_hooks=False)
    memo: dict[Any, Any] = {}
    # Views of a tensor argument held elsewhere in the graph share its
    # copy's memory (torch's storage copies read this part of the memo),
    # where that copy is of its whole storage, on the same device: a 0-dim
    # host scalar is copied alone, one element of what may be a larger
    # storage, which nothing else can be rebuilt over.
    storages: dict[int, Any] = memo.setdefault("torch", {})
    whole: dict[int, torch.UntypedStorage] = {}
    for original, twin in zip(values, copies, strict=True):
        if isinstance(original, torch.Tensor):
            memo[id(original)] = twin
            memo.setdefault(id(memo), []).append(original)
            if (
                storage_key(original) is not None
                and twin.untyped_storage().nbytes() == original.untyped_storage().nbytes()
            ):
                whole[original.untyped_storage()._cdata] = twin.untyped_storage()
                if twin.device == original.device:
                    storages[original.untyped_storage()._cdata] = twin.untyped_storage()
    copier = SideCopier(memo, graph)

    def label(index: int) -> str:
        return names[index] if names is not None and index < len(names) else str(index)

    carried = []
    for index, value in enumerate(values):
        if isinstance(value, torch.Tensor) or not graph.reaches(value):
            continue
        try:
            copies[index] = copier.copy(value)
        except Exception as error:
            if _observed_by_what_it_holds(value) and graph.owns_alone(value):
                continue  # shared, as it was before graphs were copied
            raise ConfigurationError(_uncopyable(label(index), value, error)) from None
        if _observed_by_what_it_holds(value):
            carried.append(index)
    # A deep copy leaves a tensor's hooks behind: each tensor copied in the
    # graph gets its original's, once, each hook rebuilt where it closes
    # over per-side state.
    for original in graph.tensors():
        twin = memo.get(id(original))
        if isinstance(twin, torch.Tensor) and twin is not original:
            carry_over_hooks(original, twin, copier.copy)
    if device is not None:
        _place_held(graph, memo, values, whole, device)
    return ArgumentCopies(copies, carried, graph.nodes)


def _place_held(
    graph: ObjectGraph,
    memo: dict[Any, Any],
    values: Sequence[Any],
    whole: dict[int, torch.UntypedStorage],
    device: torch.device,
) -> None:
    """Move what the copied objects hold to ``device``, as the tensor arguments were.

    Each tensor copied in the graph (a module's parameters and buffers, an
    EMA helper's averages, an optimizer's state) keeps its identity (an
    optimizer's parameters are its module's) and its aliasing: one that
    views a tensor argument's memory is rebuilt over that argument's copy,
    tensors of one storage over one moved storage. A 0-dim CPU tensor
    outside a module stays on the host, as a 0-dim argument does. Modules
    are then moved as a whole too (``Module.to``), for what a module does
    when moved (an RNN re-reads its flat weights).
    """
    arguments = {id(v) for v in values}
    modules = [memo[id(m)] for m in graph.modules() if id(m) in memo]
    in_modules = {
        id(t)
        for m in modules
        for t in (*m._parameters.values(), *m._buffers.values())
        if t is not None
    }
    groups: dict[int, list[torch.Tensor]] = {}
    for original in graph.tensors():
        twin = memo.get(id(original))
        if (
            id(original) in arguments
            or not isinstance(twin, torch.Tensor)
            or twin is original
            or is_on_device(twin.device, device)
            or (is_host_scalar(twin) and id(twin) not in in_modules)
        ):
            continue
        target = whole.get(original.untyped_storage()._cdata) if storage_key(original) else None
        if target is not None and is_on_device(target.device, device):
            over = tensor_over(target, original.dtype, original)
            replace_memory(twin, over, lambda grad: grad.to(device))
        else:
            groups.setdefault(twin.untyped_storage()._cdata, []).append(twin)
    for tensors in groups.values():
        if storage_key(tensors[0]) is None:
            for tensor in tensors:
                replace_memory(tensor, tensor.detach().to(device), lambda g: g.to(device))
            continue
        moved = storage_on(tensors[0].untyped_storage(), device)
        for tensor in tensors:
            replace_memory(
                tensor, tensor_over(moved, tensor.dtype, tensor), lambda grad: grad.to(device)
            )
    for module in modules:
        module.to(device)


def _uncopyable(name: str, value: Any, error: Exception) -> str:
    """The one line that says which argument cannot be copied, why, and what to do."""
    why = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
    kind = _kind_of(value)
    if isinstance(error, _ClosureLeftBehind):
        return (
            f"argument {name} ({kind}) leads to {_kind_of(error.closure)}, a closure over "
            f"per-side state, through {type(error.owner).__name__}, whose own __deepcopy__ "
            f"copies it as itself: each side's copy would call the caller's objects; pass "
            f"what the closure needs as arguments of the program instead"
        )
    if state_attributes(value) is not None:
        return (
            f"argument {name} ({kind}) declares {STATE_ATTRIBUTES} but cannot be copied per "
            f"side: {why}"
        )
    if is_per_side_state(value):
        return (
            f"argument {name} ({kind}) cannot be copied per side: {why}; each side needs its "
            f"own, so make it deep-copyable"
        )
    held = next(
        (f"{path} ({_kind_of(thing)})" for path, thing in held_state(name, value, set())),
        "per-side state",
    )
    return (
        f"argument {name} ({kind}) holds {held}, which each side gets its own copy of, so it "
        f"must be copied with it, but it cannot be copied: {why}; give {type(value).__name__} "
        f"a __deepcopy__, or pass the program what it holds instead"
    )


def _kind_of(value: Any) -> str:
    """A value's kind in a message: its class, or a function's name."""
    if isinstance(value, (types.FunctionType, types.MethodType)):
        return f"function {value.__qualname__}"
    return type(value).__name__
