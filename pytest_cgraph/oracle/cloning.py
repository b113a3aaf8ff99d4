"""Deep copies of a program's arguments that keep everything a compiler may key on.

Each side of a check gets its own copy of the arguments, and the copies must
be indistinguishable from the originals to the program: dtype, shape,
strides, storage offset, ``requires_grad``, leaf-ness, ``nn.Parameter``-ness,
an existing ``.grad``, the hooks registered on it — and aliasing. Two
arguments that are views of one storage in the call are views of one (new)
storage in each copy, because input aliasing is exactly what compiled code
handles specially.

Modules and optimizers are copied too: a module deep-copied (parameter
sharing, buffers, grads, training mode kept), an optimizer rebound to its
side's copies of the parameters. Without that, both sides would share one
module, and the eager side's update would be where the compiled side starts.

And so is everything else that refers to what is copied, as one object
graph per side: a learning-rate scheduler steps its side's optimizer, a
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

import collections
import copy
import copyreg
import functools
import itertools
import random
import types
import weakref
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from typing import Any

import torch

from pytest_cgraph.oracle.errors import ConfigurationError


def is_stateful_object(value: Any) -> bool:
    """A module or optimizer: an argument whose tensors live inside it."""
    return isinstance(value, (torch.nn.Module, torch.optim.Optimizer))


def is_python_random(value: Any) -> bool:
    """A ``random.Random`` itself: a generator whose state a copy carries and a
    snapshot reads (``SystemRandom``, a subclass, has no state to read)."""
    return type(value) is random.Random


#: The class attribute by which an object opts in to being program state:
#: the names of the attributes a call may change, which are then compared.
STATE_ATTRIBUTES = "__cgraph_state__"


def state_attributes(value: Any) -> tuple[str, ...] | None:
    """The attributes an object declares as its state (``__cgraph_state__``), or
    ``None`` for an object that declares none.

    Only such an object is compared by its attributes. Any other object is
    copied per side only where it refers to what is (:func:`holds_per_side_state`),
    and is then compared by the tensors, modules and optimizers it holds,
    never by its other attributes: those (timestamps, ids, floats read off
    tensors, caches) may differ between two honest runs.
    """
    if isinstance(value, (torch.Tensor, type)) or is_stateful_object(value):
        return None
    declared = getattr(type(value), STATE_ATTRIBUTES, None)
    if not isinstance(declared, tuple) or not all(isinstance(n, str) for n in declared):
        return None
    return declared


#: torch's loss scaler (``torch.cuda.amp.GradScaler`` derives from it).
GRAD_SCALER = torch.amp.GradScaler


def is_per_side_state(value: Any) -> bool:
    """What each side must have its own copy of, because a call may change it, and
    what is observed as a whole: a tensor, a module, an optimizer, a
    ``random.Random``, an object that declares its state."""
    return (
        isinstance(value, (torch.Tensor, torch.nn.Module, torch.optim.Optimizer))
        or is_python_random(value)
        or state_attributes(value) is not None
    )


def _starts_per_side_state(value: Any) -> bool:
    """What an object graph counts as per-side state: :func:`is_per_side_state`, and
    a ``GradScaler``, the one kind that holds it only later.

    A scaler makes its scale tensor on first use: a fresh one holds no
    tensor yet, and shared, the eager side's first step would be where the
    compiled side's starts (and the caller's scaler would be left changed).
    It is copied as what refers to per-side state is, and observed by the
    tensors it holds (``scaler._scale``), which is why it is not
    :func:`is_per_side_state`: this is the one place it is named.
    """
    return is_per_side_state(value) or isinstance(value, GRAD_SCALER)


def holds_per_side_state(value: Any) -> bool:
    """Whether an argument of no kind copied by itself (not a tensor, module,
    optimizer, ``random.Random`` or declared object) refers, through what it
    holds, to per-side state (:func:`is_per_side_state`, or a ``GradScaler``),
    and so is copied with it.

    Such an object is only meaningful with its side's copies: a scheduler
    shared by both sides would step the caller's optimizer and leave each
    side's learning rate where it was, an EMA helper would average the
    caller's model, a closure would call it. An object that refers to
    nothing copied (a config, a tokenizer, a log) is passed to both sides as
    it is, as before: deep-copying an arbitrary object may be costly or
    impossible, and its attributes are not compared anyway (a class that
    declares ``__cgraph_state__`` has its object copied and compared).
    """
    if _holds_nothing(value) or is_per_side_state(value):
        return False
    return ObjectGraph([value]).reaches(value)


#: Values that hold nothing a copy would follow.
_HOLD_NOTHING: tuple[type, ...] = (
    type(None),
    bool,
    int,
    float,
    complex,
    str,
    bytes,
    range,
    type,
    types.ModuleType,
    types.CodeType,
    types.FrameType,
    types.GeneratorType,
    types.CoroutineType,
    types.AsyncGeneratorType,
    types.TracebackType,
    types.BuiltinFunctionType,
    types.MethodWrapperType,
    types.WrapperDescriptorType,
    types.MethodDescriptorType,
    property,
    torch.dtype,
    torch.device,
    torch.layout,
    torch.memory_format,
)

#: The exact types of :data:`_HOLD_NOTHING`'s most common values, looked up by
#: type alone: a container's members are checked against it in one pass in
#: C, so a vocabulary of a million strings costs a set of its types, not a
#: million Python-level checks.
_ATOMIC: frozenset[type] = frozenset(
    {type(None), bool, int, float, complex, str, bytes, range, torch.dtype, torch.device}
)


def _holds_nothing(value: Any) -> bool:
    return type(value) in _ATOMIC or isinstance(value, _HOLD_NOTHING)


def _all_atomic(values: Iterable[Any]) -> bool:
    """Whether every one of ``values`` is of an :data:`_ATOMIC` type."""
    return set(map(type, values)) <= _ATOMIC


def graph_members(value: Any, *, unnamed: bool = False) -> Iterator[tuple[str, Any]]:
    """What ``value`` holds that a deep copy of it copies, each with the path
    that reaches it from ``value`` (``.net``, ``[0]``, ``['lr']``); what holds
    nothing (numbers, strings, classes) is left out.

    A function holds its closure's cells (by the names it reads them by), its
    defaults and its attributes, not its globals (module state, which both
    sides share by design); a bound method its instance; a
    ``functools.partial`` its function and arguments; a tensor its hooks,
    which call what they close over. With ``unnamed``, also what has no
    stable name (dict keys, set members, a weak reference's referent):
    enough to decide what refers to what, not to name it. A generator's or
    a frame's locals are not followed (neither can be copied), nor what an
    object of C keeps out of its attributes.
    """
    if _holds_nothing(value):
        return
    if isinstance(value, weakref.ref):
        # Its referent, to tell what refers to what (a scheduler's patch of
        # its optimizer's step holds the optimizer weakly); never named.
        referent = value()
        if unnamed and referent is not None:
            yield "<referent>", referent
        return
    if isinstance(value, torch.Tensor):
        hooks = [
            *(getattr(value, "_backward_hooks", None) or {}).values(),
            *(getattr(value, "_post_accumulate_grad_hooks", None) or {}).values(),
        ]
        yield from ((f".<hook {i}>", hook) for i, hook in enumerate(hooks))
        return
    if isinstance(value, types.FunctionType):
        for name, cell in zip(value.__code__.co_freevars, value.__closure__ or (), strict=True):
            try:
                held = cell.cell_contents
            except ValueError:  # an empty cell: a name not bound yet
                continue
            if not _holds_nothing(held):
                yield f".{name}", held
        yield from _named(".__defaults__[{}]", enumerate(value.__defaults__ or ()))
        yield from _named(".__kwdefaults__[{!r}]", (value.__kwdefaults__ or {}).items())
        yield from _named(".{}", value.__dict__.items())
        return
    if isinstance(value, types.MethodType):
        yield ".__self__", value.__self__
        yield ".__func__", value.__func__
        return
    if isinstance(value, functools.partial):
        yield ".func", value.func
        yield from _named(".args[{}]", enumerate(value.args))
        yield from _named(".keywords[{!r}]", value.keywords.items())
    elif isinstance(value, dict):
        if unnamed and not _all_atomic(value):
            for position, key in enumerate(value):
                if not _holds_nothing(key):
                    yield f"<key {position}>", key
        if not _all_atomic(value.values()):
            for position, (key, held) in enumerate(value.items()):
                if not _holds_nothing(held):
                    # Only a string key names a member the same way on both
                    # sides (an int key may be an object's id).
                    yield (f"[{key!r}]" if isinstance(key, str) else f"[#{position}]"), held
        factory = getattr(value, "default_factory", None)
        if factory is not None and not _holds_nothing(factory):
            yield ".default_factory", factory
    elif isinstance(value, (list, tuple, collections.deque)):
        if not _all_atomic(value):
            yield from _named("[{}]", enumerate(value))
    elif isinstance(value, (set, frozenset)) and unnamed and not _all_atomic(value):
        yield from (("<member>", held) for held in value if not _holds_nothing(held))
    attributes = getattr(value, "__dict__", None)
    if isinstance(attributes, dict):
        yield from _named(".{}", attributes.items())
    for cls in type(value).__mro__:
        slots = cls.__dict__.get("__slots__", ())
        for slot in (slots,) if isinstance(slots, str) else slots:
            if slot in ("__dict__", "__weakref__") or not hasattr(value, slot):
                continue
            held = getattr(value, slot)
            if not _holds_nothing(held):
                yield f".{slot}", held


def _named(form: str, pairs: Iterable[tuple[Any, Any]]) -> Iterator[tuple[str, Any]]:
    """The members of ``pairs`` (key, member) that hold something, named by ``form``
    with the key; the name is formatted only for those."""
    return ((form.format(key), held) for key, held in pairs if not _holds_nothing(held))


def _members(value: Any) -> list[Any]:
    """What ``value`` holds, as :func:`graph_members` finds it unnamed, in bulk.

    Python's own containers are read member by member only past what one
    pass of C rules out (strings, numbers), and tuples of such values (a
    tokenizer's merges) are ruled out in one more pass: the graph of a large
    argument that holds no tensor costs milliseconds, where walking it name
    by name cost a second.
    """
    cls = type(value)
    if cls is dict:
        kinds = set(map(type, value)) | set(map(type, value.values()))
        everything: Iterable[Any] = itertools.chain(value, value.values())
    elif cls in (list, tuple, set, frozenset, collections.deque):
        kinds = set(map(type, value))
        everything = value
    else:
        return [member for _, member in graph_members(value, unnamed=True)]
    if kinds <= _ATOMIC:
        return []
    held = [m for m in everything if type(m) not in _ATOMIC]
    if tuple in kinds:
        tuples = held if kinds - _ATOMIC == {tuple} else [m for m in held if type(m) is tuple]
        if _all_atomic(itertools.chain.from_iterable(tuples)):
            held = [m for m in held if type(m) is not tuple]
    return [m for m in held if not _holds_nothing(m)]


#: Containers that, empty, hold nothing: no attributes, no default factory.
_PLAIN_CONTAINERS: frozenset[type] = frozenset(
    {dict, list, tuple, set, frozenset, collections.OrderedDict}
)


def _has_hooks(tensor: torch.Tensor) -> bool:
    return bool(tensor._backward_hooks or getattr(tensor, "_post_accumulate_grad_hooks", None))


class ObjectGraph:
    """Everything some arguments hold, and which of it leads to per-side state.

    Built once per call's arguments, and shared by every side copied from
    them: what refers, through any path, to a tensor, module, optimizer
    (:func:`is_per_side_state`) or ``GradScaler`` *reaches* it, and is copied
    with it. Modules and optimizers are walked into as well, for the hooks
    and closures they hold; a tensor only into its hooks. What holds nothing
    (a string, a tuple of numbers) is no node.
    """

    def __init__(self, roots: Sequence[Any]) -> None:
        self.roots = list(roots)
        #: every object reached, by id (kept alive by the graph while it is used)
        self.nodes: dict[int, Any] = {id(r): r for r in roots if not _holds_nothing(r)}
        #: for each node, the nodes that hold it
        self._holders: dict[int, list[int]] = {}
        pending = list(self.nodes.values())
        while pending:
            value = pending.pop()
            if isinstance(value, torch.Tensor) and not _has_hooks(value):
                continue  # the most common node, and one that holds nothing
            holder = id(value)
            for member in _members(value):
                if type(member) in _PLAIN_CONTAINERS and not member:
                    continue  # a module's many hook dicts, mostly
                key = id(member)
                self._holders.setdefault(key, []).append(holder)
                if key not in self.nodes:
                    self.nodes[key] = member
                    pending.append(member)
        # Whether a node is per-side state depends on its class alone.
        kinds: dict[type, bool] = {}
        seeds = set()
        for key, node in self.nodes.items():
            starts = kinds.get(type(node))
            if starts is None:
                starts = kinds[type(node)] = _starts_per_side_state(node)
            if starts:
                seeds.add(key)
        #: the ids of the objects that are, or lead to, per-side state
        self.reaching: set[int] = self._leading_to(seeds)
        self._strong: set[int] | None = None
        self._to_closures: set[int] | None = None

    def _leading_to(self, targets: set[int], *, through_tensors: bool = True) -> set[int]:
        """``targets`` and every node that holds one, through any path (not through
        a tensor's hooks unless ``through_tensors``)."""
        found = set(targets)
        frontier = list(found)
        while frontier:
            for holder in self._holders.get(frontier.pop(), ()):
                if holder in found:
                    continue
                if not through_tensors and isinstance(self.nodes[holder], torch.Tensor):
                    continue
                found.add(holder)
                frontier.append(holder)
        return found

    def reaches(self, value: Any) -> bool:
        """Whether ``value`` (a node of the graph) is or leads to per-side state."""
        return id(value) in self.reaching

    def copied(self, value: Any) -> bool:
        """Whether ``value`` is copied: whether an argument copied with the graph holds
        it, through strong references.

        A weak reference to it then refers to its copy, made when the weak
        reference is met if it was not yet; what nothing copied holds
        strongly stays the caller's (copied, only the weak reference would
        hold it, and it would be gone).
        """
        if self._strong is None:
            strong: set[int] = set()
            pending = [r for r in self.roots if id(r) in self.reaching]
            while pending:
                node = pending.pop()
                if id(node) in strong:
                    continue
                strong.add(id(node))
                if isinstance(node, weakref.ref) or (
                    isinstance(node, types.FunctionType) and id(node) not in self.reaching
                ):
                    continue  # a weak reference, or a function shared as itself
                pending.extend(_members(node))
            self._strong = strong
        return id(value) in self._strong

    def closures(self) -> dict[int, types.FunctionType]:
        """The functions to rebuild per side: those whose closure, defaults or
        attributes lead to per-side state. Other functions are shared, as a
        deep copy shares every function."""
        return {
            key: node
            for key, node in self.nodes.items()
            if isinstance(node, types.FunctionType) and key in self.reaching
        }

    def closure_in(self, value: Any) -> types.FunctionType | None:
        """A function to rebuild (:meth:`closures`) that ``value`` leads to other
        than through a tensor's hooks (which a copy carries itself), or ``None``."""
        if self._to_closures is None:
            self._to_closures = self._leading_to(set(self.closures()), through_tensors=False)
        if id(value) not in self._to_closures:
            return None
        pending, seen = [value], {id(value)}
        while pending:
            node = pending.pop()
            if isinstance(node, types.FunctionType) and id(node) in self.reaching:
                return node
            for member in _members(node):
                if id(member) in self._to_closures and id(member) not in seen:
                    seen.add(id(member))
                    pending.append(member)
        return None

    def owns_alone(self, value: Any) -> bool:
        """Whether all the per-side state ``value`` (an argument) leads to is its own:
        no module, optimizer or scaler, and no tensor (or other state) that is
        an argument or that another argument leads to."""
        mine = self._reachable([value])
        state = {
            key for key in mine if key != id(value) and _starts_per_side_state(self.nodes[key])
        }
        stateful = (torch.nn.Module, torch.optim.Optimizer, GRAD_SCALER)
        if any(isinstance(self.nodes[key], stateful) for key in state):
            return False
        if any(id(root) in state for root in self.roots if root is not value):
            return False
        others = self._reachable([r for r in self.roots if r is not value], avoid=id(value))
        return not (state & others)

    def _reachable(self, starts: Sequence[Any], avoid: int | None = None) -> set[int]:
        found: set[int] = set()
        pending = [s for s in starts if id(s) in self.nodes and id(s) != avoid]
        while pending:
            node = pending.pop()
            if id(node) in found:
                continue
            found.add(id(node))
            pending.extend(m for m in _members(node) if id(m) in self.nodes and id(m) != avoid)
        return found

    def tensors(self) -> Iterator[torch.Tensor]:
        """Every tensor in the graph, once."""
        return (node for node in self.nodes.values() if isinstance(node, torch.Tensor))

    def modules(self) -> Iterator[torch.nn.Module]:
        """Every module in the graph, once."""
        return (node for node in self.nodes.values() if isinstance(node, torch.nn.Module))


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


class _ClosureLeftBehind(copy.Error):
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
            twin = _clone_alone(value, None)
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
    return not _holds_nothing(value) and not is_per_side_state(value)


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
            _carry_hooks(original, twin, copier.copy)
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
            or _is_on(twin.device, device)
            or (is_host_scalar(twin) and id(twin) not in in_modules)
        ):
            continue
        target = whole.get(original.untyped_storage()._cdata) if storage_key(original) else None
        if target is not None and _is_on(target.device, device):
            over = tensor_over(target, original.dtype, original)
            replace_memory(twin, over, lambda grad: grad.to(device))
        else:
            groups.setdefault(twin.untyped_storage()._cdata, []).append(twin)
    for tensors in groups.values():
        if storage_key(tensors[0]) is None:
            for tensor in tensors:
                replace_memory(tensor, tensor.detach().to(device), lambda g: g.to(device))
            continue
        moved = _storage_on(tensors[0].untyped_storage(), device)
        for tensor in tensors:
            replace_memory(
                tensor, tensor_over(moved, tensor.dtype, tensor), lambda grad: grad.to(device)
            )
    for module in modules:
        module.to(device)


def _is_on(where: torch.device, device: torch.device) -> bool:
    """Whether memory ``where`` is on ``device`` (``cuda`` names whichever ``cuda:N``)."""
    return where.type == device.type and device.index in (None, where.index)


def _storage_on(storage: torch.UntypedStorage, device: torch.device) -> torch.UntypedStorage:
    """A copy of ``storage`` on ``device``, byte for byte (through a tensor: a
    storage's own ``to`` knows only the devices of a loaded backend module)."""
    raw = torch.empty(0, dtype=torch.uint8, device=storage.device).set_(storage)
    return raw.to(device).untyped_storage()


def tensor_over(
    storage: torch.UntypedStorage, dtype: torch.dtype, like: torch.Tensor
) -> torch.Tensor:
    """A tensor of ``dtype`` over ``storage`` with the geometry of ``like``: its size,
    strides and storage offset (in elements)."""
    fresh = torch.empty(0, dtype=dtype, device=storage.device)
    return fresh.set_(storage, like.storage_offset(), like.size(), like.stride())


def replace_memory(
    tensor: torch.Tensor,
    fresh: torch.Tensor,
    convert_grad: Callable[[torch.Tensor], torch.Tensor],
) -> None:
    """Give ``tensor`` the memory (device, dtype) of ``fresh`` in place, as
    ``Module.to`` and ``Module.double`` do: the tensor keeps its identity
    (what holds it holds it still), leaf-ness, ``requires_grad`` and hooks;
    its ``.grad`` is converted with ``convert_grad``.

    Where torch cannot give a tensor of one kind the memory of another (the
    ``meta`` device), the two are swapped instead (``swap_tensors``, as
    ``Module.to`` does then).
    """
    grad = tensor.grad if tensor.is_leaf else None
    if grad is not None:
        tensor.grad = None
    if torch._has_compatible_shallow_copy_type(tensor, fresh):
        tensor.data = fresh
    else:
        stand_in = (
            torch.nn.Parameter(fresh, requires_grad=tensor.requires_grad)
            if isinstance(tensor, torch.nn.Parameter)
            else fresh.requires_grad_(tensor.requires_grad)
        )
        torch.utils.swap_tensors(tensor, stand_in)
    if grad is not None:
        tensor.grad = convert_grad(grad)


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


def held_state(name: str, value: Any, seen: set[int]) -> Iterator[tuple[str, Any]]:
    """The per-side state an argument copied with its graph holds, by path
    (``trainer.net``, ``scaler._scale``): tensors, modules, optimizers,
    ``random.Random`` objects and declared objects, each once.

    What ``seen`` holds (the ids of what other arguments already show) is
    left out, and what is yielded is added to it, so a module passed itself
    and held by an EMA helper is observed once, by its own name. The order
    is the graph's (attributes in the order they were set), the same on
    both sides; unnamed members (dict keys, sets) are left out.
    """
    visited: set[int] = set()
    pending: list[tuple[str, Any]] = [(name, value)]
    while pending:
        path, held = pending.pop()
        if id(held) in visited:
            continue
        visited.add(id(held))
        if held is not value and is_per_side_state(held):
            if id(held) not in seen:
                seen.add(id(held))
                yield path, held
            continue
        members = [(path + suffix, member) for suffix, member in graph_members(held)]
        pending.extend(reversed(members))


def named_state(name: str, value: Any) -> Iterator[tuple[str, torch.Tensor | None]]:
    """The tensors a module or optimizer holds, named by path: ``net.lin.weight``.

    An optimizer's state is named by its parameters' positions in its
    groups: ``opt.state[0].momentum_buffer``.
    """
    if isinstance(value, torch.nn.Module):
        yield from ((f"{name}.{path}", t) for path, t in value.named_parameters())
        yield from ((f"{name}.{path}", t) for path, t in value.named_buffers())
    elif isinstance(value, torch.optim.Optimizer):
        position = 0
        for group in value.param_groups:
            for parameter in group["params"]:
                state = value.state.get(parameter, {})
                for key in sorted(state):
                    if isinstance(state[key], torch.Tensor):
                        yield f"{name}.state[{position}].{key}", state[key]
                position += 1


#: The identity of a tensor's memory: its device and its storage's address.
StorageKey = tuple[torch.device, int]


def storage_key(tensor: torch.Tensor) -> StorageKey | None:
    """Identity of the memory behind ``tensor``, or ``None`` when it has none.

    Zero-byte storages all report address 0 and would look aliased, so they
    are treated as aliasing nothing.
    """
    if tensor.layout != torch.strided:
        return None
    storage = tensor.untyped_storage()
    if storage.nbytes() == 0:
        return None
    return tensor.device, storage.data_ptr()


def is_host_scalar(tensor: torch.Tensor) -> bool:
    """A 0-dim tensor on the CPU: a host value as far as a device program goes."""
    return tensor.dim() == 0 and tensor.device.type == "cpu"


def clone_preserving_aliases(
    values: Sequence[Any], device: torch.device | None = None, *, carry_hooks: bool = True
) -> list[Any]:
    """Copy every tensor in ``values`` (a flat list); other values pass through.

    With ``device`` set, the copies are made there (arguments of a CUDA run
    built on the CPU) — except 0-dim CPU tensors, which stay on the host:
    they are host scalars, which the CUDA-graph path must handle as such.
    Each copy gets its original's hooks unless ``carry_hooks`` is false
    (:func:`clone_arguments` carries them itself, over its side's graph).
    """
    copies: list[Any] = list(values)
    groups: dict[StorageKey, list[int]] = {}
    for index, value in enumerate(values):
        if not isinstance(value, torch.Tensor):
            continue
        key = storage_key(value)
        if key is None or is_host_scalar(value):
            copies[index] = _clone_alone(value, device)
        else:
            groups.setdefault(key, []).append(index)
    for indices in groups.values():
        for index, twin in zip(
            indices, _clone_group([values[i] for i in indices], device), strict=True
        ):
            copies[index] = twin
    if carry_hooks:
        for original, twin in zip(values, copies, strict=True):
            if isinstance(original, torch.Tensor):
                _carry_hooks(original, twin)
    return copies


def _carry_hooks(
    original: torch.Tensor, copy: torch.Tensor, hook_copy: Callable[[Any], Any] | None = None
) -> None:
    """Register on ``copy`` the grad hooks and post-accumulate-grad hooks of ``original``.

    A test may register them on an argument (a gradient clip, an optimizer
    step run in backward), and how compiled code calls them is part of what
    is checked: each side's copy calls the same functions, in the same
    order, as the argument would have. ``hook_copy`` gives each hook as this
    side has it (a hook that closes over a module calls this side's copy).
    """
    for hook in (original._backward_hooks or {}).values():
        copy.register_hook(hook_copy(hook) if hook_copy is not None else hook)
    for hook in (original._post_accumulate_grad_hooks or {}).values():
        copy.register_post_accumulate_grad_hook(hook_copy(hook) if hook_copy is not None else hook)


def _clone_alone(tensor: torch.Tensor, device: torch.device | None) -> torch.Tensor:
    copy = tensor.detach().clone()
    if device is not None and not is_host_scalar(tensor):
        copy = copy.to(device)
    return _restore_autograd(tensor, copy)


def _clone_group(tensors: list[torch.Tensor], device: torch.device | None) -> list[torch.Tensor]:
    """Copy tensors sharing one storage so that the copies share a new one.

    View-ness is kept as well as aliasing, because AOTAutograd treats a
    mutated input that is a view differently from one that owns its memory:
    an argument that was a view becomes a view (of the copy of the first
    argument that was not, or of a stand-in base over the whole storage).
    """
    new_storage = tensors[0].untyped_storage().clone()
    if device is not None and not _is_on(new_storage.device, device):
        new_storage = _storage_on(new_storage, device)

    def over_new_storage(
        tensor: torch.Tensor, size: Sequence[int], stride: Sequence[int], offset: int | torch.SymInt
    ) -> torch.Tensor:
        fresh = torch.empty(0, dtype=tensor.dtype, device=new_storage.device)
        return fresh.set_(new_storage, offset, size, stride)

    owner_index = next((i for i, t in enumerate(tensors) if not t._is_view()), None)
    if owner_index is not None:
        owner = tensors[owner_index]
        base = _restore_autograd(
            owner,
            over_new_storage(owner, owner.size(), owner.stride(), owner.storage_offset()),
        )
    else:
        # Only views were given: stand their base in with a tensor of the
        # base's own geometry (AOTAutograd replays an output's views from
        # the base, so a base of another rank is another program), or a
        # flat one over the whole storage where the base is not at hand;
        # differentiable if any of the views was.
        first = tensors[0]
        known = first._base
        if known is not None and known.dtype == first.dtype:
            geometry: tuple[Sequence[int], Sequence[int], int | torch.SymInt] = (
                known.size(),
                known.stride(),
                known.storage_offset(),
            )
        else:
            geometry = ((new_storage.nbytes() // first.element_size(),), (1,), 0)
        base = over_new_storage(first, *geometry)
        if any(_views_an_activation(t) for t in tensors):
            base = _as_activation(base)
        elif any(t.requires_grad for t in tensors):
            base.requires_grad_(True)

    copies = []
    for index, tensor in enumerate(tensors):
        if index == owner_index:
            copies.append(base)
        elif tensor._is_view():
            view = base.as_strided(tensor.size(), tensor.stride(), tensor.storage_offset())
            if tensor.requires_grad and not view.requires_grad:
                view.requires_grad_(True)
            elif view.requires_grad and not tensor.requires_grad:
                view = view.detach()
            copies.append(view)
        else:
            plain = over_new_storage(
                tensor, tensor.size(), tensor.stride(), tensor.storage_offset()
            )
            copies.append(_restore_autograd(tensor, plain))
    return copies


def _restore_autograd(original: torch.Tensor, copy: torch.Tensor) -> torch.Tensor:
    """Give ``copy`` the autograd standing of ``original``."""
    if not original.requires_grad:
        if isinstance(original, torch.nn.Parameter):
            return torch.nn.Parameter(copy, requires_grad=False)
        return copy
    if original.is_leaf:
        copy = (
            torch.nn.Parameter(copy)
            if isinstance(original, torch.nn.Parameter)
            else (copy.requires_grad_(True))
        )
        if original.grad is not None:
            copy.grad = original.grad.detach().clone().to(copy.device)
        return copy
    # A non-leaf with no alias among the arguments: one differentiable op
    # keeps it a non-leaf that requires grad, and a view only if it was one:
    # a view of that non-leaf, never of a leaf (a view of a leaf may not be
    # written in place, where the original may).
    activation = _as_activation(copy)
    return activation.view_as(activation) if original._is_view() else activation


def _views_an_activation(tensor: torch.Tensor) -> bool:
    """Whether ``tensor`` is a view of a non-leaf that requires grad (an activation)."""
    base = tensor._base
    return base is not None and base.requires_grad and not base.is_leaf


def _as_activation(tensor: torch.Tensor) -> torch.Tensor:
    """``tensor``, over the same storage, made a non-leaf that requires grad.

    Multiplying in place by a leaf 1 that requires grad leaves every value as
    it was (signed zeros and NaNs included) and gives the tensor a grad_fn,
    as a model's activation has; its views may then be written in place.
    """
    one = torch.ones((), dtype=tensor.dtype, device=tensor.device, requires_grad=True)
    return tensor.mul_(one)
