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
twice eager's error (three times in float16 or bfloat16, or in a tensor of
fewer than 1000 elements, where noise dominates: ``same``'s own rule) plus
the dtype's ``atol``. The float64 run is eager
again, from fresh copies of the arguments converted to float64, with
float64 as the default dtype, and what objects copied with them hold (a
trainer's model, an EMA helper's averages) converted too. Where it cannot
stand for the exact answer the difference stands: arguments that alias or
are views (converting them would break the aliasing a compiler must keep),
non-leaf arguments, held tensors conversion would split from the memory
they share (:func:`to_float64`), or a reference that raised, differs in
structure, or is not finite.

Random numbers: float64 draws other numbers than float32 or bfloat16, so
the float64 run is given eager's own draws instead (:class:`RandomDraws`).
Eager runs once more at the program's precision and its draws are recorded;
the float64 run makes the same calls and each draw's result is overwritten
with the recorded one, converted. That is the exact answer to the program
eager ran (a dropout mask, a ``rand`` offset), and a compiled random stream
that differs from eager's is still far from it. Where the draws cannot be
carried over (a random op that mixes its inputs into its result, such as a
fused dropout or ``rrelu``, or a float64 run that draws other calls or
shapes) the difference stands.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from pytest_cgraph.oracle.cloning import replace_memory, storage_key, tensor_over
from pytest_cgraph.oracle.compare import TensorSnapshot, Tolerance
from pytest_cgraph.oracle.difference import Difference, Kind, Place, Role
from pytest_cgraph.oracle.graphs import (
    GRAD_SCALER,
    graph_members,
    is_python_random,
    state_attributes,
)
from pytest_cgraph.oracle.sides import ArgumentCopies, carried_arguments

#: How much further from float64 than eager the compiled value may be:
#: ``torch._dynamo.utils.same``'s multipliers. 2 for a large float32 tensor;
#: 3 for float16 or bfloat16, and for a tensor of fewer than
#: :data:`SMALL_TENSOR` elements, where noise dominates the error (the values
#: of a mixed-precision step's parameters, a bias whose true gradient is 0).
#: Drawn programs' tensors are small, so for them 3 is the rule, as it is in
#: torch's check of a small model. The error is the largest, where ``same``
#: takes the root mean square: one element's rounding is not averaged away.
ERROR_MULTIPLIER = 2.0
NOISY_ERROR_MULTIPLIER = 3.0
SMALL_TENSOR = 1000

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
    What an object copied with the graph holds (:func:`_float64_targets`: an
    EMA helper's averages, a trainer's model) is converted as the arguments
    are, or the float64 run would run it at the program's precision and be
    no exact answer; tensors that share memory are converted together, so
    they still do. Refused only where conversion cannot keep the program as
    it was: a tensor argument that aliases another or is a view, a non-leaf
    (the graph behind it stays at its precision), a held tensor that views
    a module's memory without being one of its tensors (``double()`` moves
    the module's, not the view's), tensors of one memory in two dtypes, or
    a tensor the copies share with the caller.
    """
    tensors = [value for value in flat if isinstance(value, torch.Tensor)]
    storages = [storage_key(t) for t in tensors if t.numel()]
    if any(t._is_view() or (t.requires_grad and not t.is_leaf) for t in tensors) or len(
        storages
    ) != len(set(storages)):
        return False
    targets = _float64_targets(flat)
    if targets is None:
        return False
    modules, data = targets
    in_modules = {id(t): t for m in modules for t in (*m.parameters(), *m.buffers())}
    module_memory = {storage_key(t) for t in in_modules.values()} - {None}
    groups: dict[Any, list[torch.Tensor]] = {}
    for tensor in data:
        if id(tensor) in in_modules:
            continue  # converted with its module
        if tensor.requires_grad and not tensor.is_leaf:
            return False
        key = storage_key(tensor)
        if key in module_memory:
            return False
        groups.setdefault(key if key is not None else id(tensor), []).append(tensor)
    if any(len({t.dtype for t in group}) > 1 for group in groups.values()):
        return False
    for module in modules:
        module.double()
    for group in groups.values():
        if _narrow_float(group[0]):
            _widened_in_place(group)
    return True


#: What holds a training loop's settings rather than its values: a
#: scheduler's learning rates (``base_lrs``, tensors where the optimizer's
#: are), a scaler's scale and growth count. Their tensors keep their dtype
#: in the float64 run: they are inputs the program is given, not values it
#: computes at its precision, and torch holds them to theirs (the scaler's
#: kernels take a float32 scale only). What such an object holds of the
#: program's own (the optimizer a scheduler steps) is converted still.
_SETTINGS_HOLDERS: tuple[type, ...] = (
    torch.optim.lr_scheduler.LRScheduler,
    torch.optim.lr_scheduler.ReduceLROnPlateau,
    GRAD_SCALER,
)


def _float64_targets(
    flat: Sequence[Any],
) -> tuple[list[torch.nn.Module], list[torch.Tensor]] | None:
    """The modules, and the tensors outside them, that the float64 run converts:
    the arguments, what the objects copied with the graph hold
    (:func:`sides.carried_arguments`) and what a declared object holds, each
    once, an optimizer's state included (its group settings are left as
    they are). ``None`` where one of them is the caller's own (a copy that
    shares what it holds): converting it would change the caller's object.

    Weak references are not followed: what one refers to is held elsewhere
    on this side, or it is not this side's.
    """
    carried = carried_arguments(flat)
    originals = flat.originals if isinstance(flat, ArgumentCopies) else {}
    modules: dict[int, torch.nn.Module] = {}
    optimizers: dict[int, torch.optim.Optimizer] = {}
    data: dict[int, torch.Tensor] = {}
    pending: list[tuple[Any, bool]] = [
        (value, False)
        for index, value in enumerate(flat)
        if index in carried
        or state_attributes(value) is not None
        or isinstance(value, (torch.Tensor, torch.nn.Module, torch.optim.Optimizer))
    ]
    visited: set[tuple[int, bool]] = set()
    while pending:
        value, setting = pending.pop()
        if (id(value), setting) in visited:
            continue
        visited.add((id(value), setting))
        if isinstance(value, torch.Tensor):
            if not setting:
                data[id(value)] = value
        elif isinstance(value, torch.nn.Module):
            modules[id(value)] = value
        elif isinstance(value, torch.optim.Optimizer):
            optimizers[id(value)] = value
        elif not is_python_random(value):
            inner = setting or isinstance(value, _SETTINGS_HOLDERS)
            pending.extend((member, inner) for _, member in graph_members(value))
    for optimizer in optimizers.values():
        for state in optimizer.state.values():
            data.update((id(t), t) for t in state.values() if isinstance(t, torch.Tensor))
    if any(key in originals for key in (*modules, *data)):
        return None
    return list(modules.values()), list(data.values())


def _widened_in_place(tensors: list[torch.Tensor]) -> None:
    """Convert tensors of one memory and one dtype to float64 in place, over one new
    memory: a tensor keeps its identity, a view stays a view of the same
    elements of the others."""
    first = tensors[0]
    if len(tensors) == 1:
        replace_memory(first, first.detach().double(), lambda grad: grad.double())
        return
    storage = first.untyped_storage()
    elements = storage.nbytes() // first.element_size()
    whole = torch.empty(0, dtype=first.dtype, device=first.device)
    wide = whole.set_(storage, 0, (elements,), (1,)).double().untyped_storage()
    for tensor in tensors:
        replace_memory(tensor, tensor_over(wide, torch.float64, tensor), lambda grad: grad.double())


def explained_by_rounding(
    place: Place, eager: Any, compiled: Any, reference: Any, tolerance: Tolerance
) -> bool:
    """Whether the difference at ``place`` is rounding: compiled is no further from
    the float64 ``reference`` observation than eager's error times the
    multiplier of torch's own accuracy check (:data:`ERROR_MULTIPLIER`, or
    :data:`NOISY_ERROR_MULTIPLIER` for low precision and small tensors) plus
    the dtype's ``atol``."""
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
    noisy = expected.dtype in (torch.float16, torch.bfloat16) or wide[2].numel() < SMALL_TENSOR
    multiplier = NOISY_ERROR_MULTIPLIER if noisy else ERROR_MULTIPLIER
    return compiled_error <= multiplier * eager_error + atol


#: Random ops whose whole result is the draw (a fill, a 0/1 mask, an index, a
#: count): eager's result, converted, is what the float64 run would compute
#: from the same draws. ``random_`` carries no ``nondeterministic_seeded`` tag.
_DRAW_OPS = frozenset(
    {
        "bernoulli",
        "bernoulli_",
        "cauchy",
        "cauchy_",
        "exponential",
        "exponential_",
        "geometric",
        "geometric_",
        "log_normal",
        "log_normal_",
        "multinomial",
        "normal_",
        "poisson",
        "rand",
        "rand_like",
        "randint",
        "randint_like",
        "randn",
        "randn_like",
        "random",
        "random_",
        "randperm",
        "uniform",
        "uniform_",
    }
)
#: ``normal`` is a draw only with a float mean and std; with a tensor one it
#: is ``mean + std * z``, which mixes its inputs in.
_NORMAL_DRAWS = frozenset({"float_float", "float_float_out"})


def _draws(func: Any) -> bool:
    name = func.overloadpacket.__name__
    return name in _DRAW_OPS or name == "normal" or torch.Tag.nondeterministic_seeded in func.tags


def _replayable(func: Any) -> bool:
    name = func.overloadpacket.__name__
    if name == "normal":
        return func._overloadname in _NORMAL_DRAWS
    return name in _DRAW_OPS


def generator_states() -> list[torch.Tensor]:
    """The default generators' states: the CPU's, and every CUDA device's once CUDA is up."""
    states = [torch.get_rng_state()]
    if torch.cuda.is_initialized():
        states.extend(torch.cuda.get_rng_state_all())
    return states


def _moved(before: list[torch.Tensor]) -> bool:
    """Whether a default generator's state differs from ``before``."""
    now = generator_states()
    return len(now) != len(before) or any(
        not torch.equal(state, then) for state, then in zip(now, before, strict=True)
    )


@dataclass(frozen=True)
class Draw:
    """One random op's result as eager drew it: the op, and its values."""

    op: str
    values: torch.Tensor


class RandomDraws(TorchDispatchMode):
    """Eager's random draws: recorded in one run, played back into the float64 run.

    Built without ``recorded`` it records each draw's result; built with
    another instance's ``draws`` it lets each draw run (the generators advance
    as before) and overwrites its result with the recorded one, in order: the
    same op, shape and kind of values (floating or not), converted.
    ``native_dropout`` (dropout on CUDA) is carried over by its mask: the
    output is recomputed from the input at the run's precision.
    :attr:`faithful` turns false on a random op whose result mixes its inputs
    in otherwise (``rrelu``; an op tagged random that moved a generator, where
    one that drew nothing, an attention without dropout, is no draw), and in
    playback on a draw of another op, shape or kind, or one more than was
    recorded; :attr:`complete` says every recorded draw was played back too.
    """

    def __init__(self, recorded: list[Draw] | None = None) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.recording = recorded is None
        self.draws: list[Draw] = [] if recorded is None else recorded
        self.played = 0
        self.faithful = True

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if not _draws(func):
            return func(*args, **kwargs)
        before = generator_states()
        result = func(*args, **kwargs)
        name = str(func.overloadpacket.__name__)
        if name == "native_dropout":
            drawn = result[1] if isinstance(result, tuple) else None
        elif _replayable(func) and isinstance(result, torch.Tensor):
            drawn = result
        else:
            drawn = None
        if drawn is None:
            # A random op of another kind: no draw if it moved no generator.
            self.faithful = self.faithful and not _moved(before)
        elif self.recording:
            self.draws.append(Draw(name, drawn.detach().clone()))
        elif self._next_fits(name, drawn):
            recorded = self.draws[self.played].values
            self.played += 1
            if name == "native_dropout":
                _replay_dropout(result, recorded, args, kwargs)
            else:
                drawn.copy_(recorded)
        else:
            self.faithful = False
        return result

    def _next_fits(self, name: str, drawn: torch.Tensor) -> bool:
        if self.played >= len(self.draws):
            return False
        recorded = self.draws[self.played]
        return (
            recorded.op == name
            and recorded.values.shape == drawn.shape
            and recorded.values.is_floating_point() == drawn.is_floating_point()
        )

    @property
    def complete(self) -> bool:
        """Every draw was carried over: the float64 run computed from eager's draws."""
        return self.faithful and (self.recording or self.played == len(self.draws))


def _replay_dropout(result: Any, mask: torch.Tensor, args: Any, kwargs: Any) -> None:
    """``native_dropout(input, p, train)``'s output from eager's ``mask``, at this run's
    precision: ``input * mask / (1 - p)`` in training, as the kernel computes it."""
    output, own_mask = result
    source, p = args[0], float(args[1] if len(args) > 1 else kwargs["p"])
    train = args[2] if len(args) > 2 else kwargs.get("train")
    own_mask.copy_(mask)
    if train is False:
        return
    scale = 0.0 if p >= 1 else 1.0 / (1.0 - p)
    output.copy_(source * own_mask.to(source.dtype) * scale)


def _narrow_float(tensor: torch.Tensor) -> bool:
    return tensor.dtype.is_floating_point and tensor.dtype != torch.float64
