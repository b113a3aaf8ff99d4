"""What a program's arguments hold, as one object graph, and which of it is per-side state.

Each side of a check must have its own copy of what a call may change (a
tensor, a module, an optimizer, a ``random.Random``, an object that declares
its state), and of everything that refers to it: a learning-rate scheduler
steps an optimizer, a ``GradScaler`` scales a loss, an EMA helper or a
trainer holds a module, a hook or a closure calls one. This module decides
what that is, and copies nothing: which kinds are per-side state, what a
value holds and by what path (:func:`graph_members`), and
:class:`ObjectGraph`, one call's arguments walked once, which knows what
leads to per-side state and so is copied with it (by :mod:`sides`). What a
side holds is observed by the paths found here (:func:`held_state`,
:func:`named_state`).
"""

from __future__ import annotations

import collections
import functools
import itertools
import random
import types
import weakref
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import torch


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
    if holds_nothing(value) or is_per_side_state(value):
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


def holds_nothing(value: Any) -> bool:
    """Whether ``value`` holds nothing a copy would follow (:data:`_HOLD_NOTHING`)."""
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
    if holds_nothing(value):
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
            if not holds_nothing(held):
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
                if not holds_nothing(key):
                    yield f"<key {position}>", key
        if not _all_atomic(value.values()):
            for position, (key, held) in enumerate(value.items()):
                if not holds_nothing(held):
                    # Only a string key names a member the same way on both
                    # sides (an int key may be an object's id).
                    yield (f"[{key!r}]" if isinstance(key, str) else f"[#{position}]"), held
        factory = getattr(value, "default_factory", None)
        if factory is not None and not holds_nothing(factory):
            yield ".default_factory", factory
    elif isinstance(value, (list, tuple, collections.deque)):
        if not _all_atomic(value):
            yield from _named("[{}]", enumerate(value))
    elif isinstance(value, (set, frozenset)) and unnamed and not _all_atomic(value):
        yield from (("<member>", held) for held in value if not holds_nothing(held))
    attributes = getattr(value, "__dict__", None)
    if isinstance(attributes, dict):
        yield from _named(".{}", attributes.items())
    for cls in type(value).__mro__:
        slots = cls.__dict__.get("__slots__", ())
        for slot in (slots,) if isinstance(slots, str) else slots:
            if slot in ("__dict__", "__weakref__") or not hasattr(value, slot):
                continue
            held = getattr(value, slot)
            if not holds_nothing(held):
                yield f".{slot}", held


def _named(form: str, pairs: Iterable[tuple[Any, Any]]) -> Iterator[tuple[str, Any]]:
    """The members of ``pairs`` (key, member) that hold something, named by ``form``
    with the key; the name is formatted only for those."""
    return ((form.format(key), held) for key, held in pairs if not holds_nothing(held))


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
    return [m for m in held if not holds_nothing(m)]


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
        self.nodes: dict[int, Any] = {id(r): r for r in roots if not holds_nothing(r)}
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
