"""The op catalog: one declarative record per op, simplest first.

A record says which families use the op, which live variables it may apply
to, and how it draws its arguments relative to those variables (a dim within
the target's rank, an index within its size, another variable to combine
with). It never decides legality by itself: the generator executes every
drawn statement on concrete tensors and lets torch reject what is illegal,
which keeps the catalog small and the drawn programs valid.

The record's ``name`` is the op as written in the source (``add_``, ``t_``,
``index_put_``): that is the key of coverage reports.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from hypothesis import strategies as st

from pytest_cgraph.strategies.families import FAMILIES

__all__ = [
    "FAMILIES",
    "HAZARD_CLASSES",
    "OPS",
    "Context",
    "OpSpec",
    "Var",
    "hazard_strata",
    "ops_for",
]

Draw = Callable[[st.SearchStrategy[Any]], Any]


@dataclass
class Var:
    """A live variable of the program being drawn, with its concrete value."""

    name: str
    value: Any
    origin: str  # "input", "parameter", "scalar", "view", "factory", "intermediate"

    @property
    def tensor(self) -> torch.Tensor | None:
        """The value if it is a tensor."""
        return self.value if isinstance(self.value, torch.Tensor) else None


@dataclass
class Context:
    """What a record's builder sees: the draw function, the target, the variables."""

    draw: Draw
    target: Var
    variables: list[Var]
    new_name: str

    @property
    def x(self) -> str:
        """The target's name."""
        return self.target.name

    @property
    def t(self) -> torch.Tensor:
        """The target's value."""
        value = self.target.tensor
        assert value is not None
        return value

    def dim(self) -> int:
        """A dimension of the target (shrinks to 0)."""
        dim: int = self.draw(st.integers(0, max(self.t.dim() - 1, 0)))
        return dim

    def index(self, dim: int = 0) -> int:
        """An index within the target's size along ``dim`` (shrinks to 0)."""
        return self.draw(st.integers(0, max(self.t.shape[dim] - 1, 0))) if self.t.dim() else 0

    def other(self, predicate: Callable[[torch.Tensor], bool] | None = None) -> str | None:
        """Another tensor variable, e.g. the operand of a binary op."""
        pool = [
            v.name
            for v in self.variables
            if v.tensor is not None and (predicate is None or _holds(predicate, v.tensor))
        ]
        return self.draw(st.sampled_from(pool)) if pool else None

    def operand(self) -> str:
        """A right-hand operand: a Python number, a host scalar input, or a variable."""
        choice = self.draw(st.integers(0, 2))
        scalars = [v.name for v in self.variables if v.origin == "scalar"]
        if choice == 1 and scalars:
            scalar: str = self.draw(st.sampled_from(scalars))
            return scalar
        if choice == 2:
            other = self.other(lambda t: t.dtype == self.t.dtype)
            if other is not None:
                return other
        number: str = self.draw(st.sampled_from(["2", "0.5", "-1.5", "3"]))
        return number


def _holds(predicate: Callable[[torch.Tensor], bool], tensor: torch.Tensor) -> bool:
    """``predicate(tensor)``, false where torch refuses to inspect the tensor."""
    try:
        return predicate(tensor)
    except RuntimeError:
        return False


Builder = Callable[[Context], "tuple[list[str], bool] | None"]


@dataclass(frozen=True)
class OpSpec:
    """One op: its source name, families, which variables it applies to, how it is built.

    ``build(ctx)`` returns the source lines and whether they bind ``ctx.new_name``.
    ``kind`` groups ops for readers: outplace, inplace, view, metadata,
    transfer, autograd, rng, factory.
    """

    name: str
    kind: str
    families: frozenset[str]
    applies: Callable[[Var], bool]
    build: Builder
    #: The start of the one warning eager may give for this op and still be
    #: drawn (any other warning rejects the statement, as for every op).
    tolerated_warning: str = ""


def _floating(var: Var) -> bool:
    return var.tensor is not None and var.tensor.dtype.is_floating_point


def _tensor(var: Var) -> bool:
    return var.tensor is not None


def _rank_at_least(n: int) -> Callable[[Var], bool]:
    return lambda var: var.tensor is not None and var.tensor.dim() >= n


def _floating_rank(n: int) -> Callable[[Var], bool]:
    return lambda var: _floating(var) and var.tensor is not None and var.tensor.dim() >= n


def _writable(predicate: Callable[[Var], bool]) -> Callable[[Var], bool]:
    """``predicate``, and the tensor may be written in place: torch rejects writes
    to leaves that require grad and (for most ops) to memory with internal overlap."""

    def applies(var: Var) -> bool:
        tensor = var.tensor
        return (
            predicate(var)
            and tensor is not None
            and not _is_grad_leaf(tensor)
            and torch._debug_has_internal_overlap(tensor) != 1
        )

    return applies


def _is_leaf(tensor: torch.Tensor) -> bool:
    """``tensor.is_leaf``; a view torch has invalidated (an ``unbind`` output whose
    base was written in place) raises on it, and counts as no leaf."""
    try:
        return tensor.is_leaf
    except RuntimeError:
        return False


def _is_grad_leaf(tensor: torch.Tensor) -> bool:
    return _is_leaf(tensor) and tensor.requires_grad


def _not_grad_leaf(var: Var) -> bool:
    return var.tensor is not None and not _is_grad_leaf(var.tensor)


def _matrix_or_less(var: Var) -> bool:
    return var.tensor is not None and 1 <= var.tensor.dim() <= 2


def _needs_grad(var: Var) -> bool:
    return var.tensor is not None and var.tensor.requires_grad


def _leaf_without_grad(var: Var) -> bool:
    tensor = var.tensor
    return (
        tensor is not None
        and tensor.dtype.is_floating_point
        and _is_leaf(tensor)
        and not tensor.requires_grad
    )


def _leaf_with_grad(var: Var) -> bool:
    return var.tensor is not None and _is_grad_leaf(var.tensor)


def _floating_leaf(var: Var) -> bool:
    tensor = var.tensor
    return tensor is not None and tensor.dtype.is_floating_point and _is_leaf(tensor)


def _nonleaf_with_grad(var: Var) -> bool:
    tensor = var.tensor
    return tensor is not None and tensor.requires_grad and not _is_leaf(tensor)


def _assign(expression: str) -> Builder:
    """``v = <expression>`` with ``{x}`` the target."""
    return lambda ctx: ([f"{ctx.new_name} = {expression.format(x=ctx.x)}"], True)


def _assign_one_of(*expressions: str) -> Builder:
    """``v = <one of expressions>``, drawn (shrinks to the first), ``{x}`` the target."""
    return lambda ctx: (
        [f"{ctx.new_name} = {ctx.draw(st.sampled_from(expressions)).format(x=ctx.x)}"],
        True,
    )


def _statement(line: str) -> Builder:
    return lambda ctx: ([line.format(x=ctx.x)], False)


def _binary(op: str) -> Builder:
    return lambda ctx: ([f"{ctx.new_name} = {ctx.x} {op} {ctx.operand()}"], True)


def _inplace(method: str) -> Builder:
    return lambda ctx: ([f"{ctx.x}.{method}({ctx.operand()})"], False)


def _sum_dim(ctx: Context) -> tuple[list[str], bool]:
    return [f"{ctx.new_name} = {ctx.x}.sum({ctx.dim()})"], True


def _matmul(ctx: Context) -> tuple[list[str], bool]:
    return [f"{ctx.new_name} = {ctx.x} @ {ctx.x}.transpose(-1, -2)"], True


def _factory(ctx: Context) -> tuple[list[str], bool]:
    maker = ctx.draw(st.sampled_from(["zeros_like", "ones_like", "empty_like", "full_like"]))
    extra = ", 1.5" if maker == "full_like" else ""
    if maker == "empty_like":
        return [f"{ctx.new_name} = torch.empty_like({ctx.x}).fill_(0.25)"], True
    return [f"{ctx.new_name} = torch.{maker}({ctx.x}{extra})"], True


def _clamp(ctx: Context) -> tuple[list[str], bool]:
    return [f"{ctx.x}.clamp_(min=-0.5, max=0.5)"], False


def _copy(ctx: Context) -> tuple[list[str], bool] | None:
    source = ctx.other(lambda t: t.shape == ctx.t.shape)
    return ([f"{ctx.x}.copy_({source})"], False) if source is not None else None


def _fill(ctx: Context) -> tuple[list[str], bool]:
    scalars = [v.name for v in ctx.variables if v.origin == "scalar"]
    value = ctx.draw(st.sampled_from([*scalars, "1.5"])) if scalars else "1.5"
    return [f"{ctx.x}.fill_({value})"], False


def _masked_fill(ctx: Context) -> tuple[list[str], bool]:
    return [f"{ctx.x}.masked_fill_({ctx.x} > 0, 0.25)"], False


def _index_put(ctx: Context) -> tuple[list[str], bool]:
    accumulate = ctx.draw(st.booleans())
    i, j = ctx.index(), ctx.index()
    index = f"torch.tensor([{i}, {j}])"
    # A number, or values read from the target itself (the rows written, or
    # all of it over every row): the write then reads what it overwrites.
    # Duplicate indices read the same row, so they write one value.
    values = ctx.draw(
        st.sampled_from(
            [
                f"torch.tensor(1.0, dtype={ctx.x}.dtype)",
                f"{ctx.x}[{index}] * 2",
                f"{ctx.x} * 2",
            ]
        )
    )
    if values == f"{ctx.x} * 2":
        index = f"torch.arange({ctx.x}.size(0))"
    return [f"{ctx.x}.index_put_(({index},), {values}, accumulate={accumulate})"], False


def _index_add(ctx: Context) -> tuple[list[str], bool]:
    i = ctx.index()
    return [f"{ctx.x}.index_add_(0, torch.tensor([{i}]), torch.ones_like({ctx.x}[:1]))"], False


def _scatter(ctx: Context) -> tuple[list[str], bool]:
    return [
        f"{ctx.x}.scatter_({ctx.dim()}, torch.zeros_like({ctx.x}, dtype=torch.long), 2.0)"
    ], False


def _out_variant(ctx: Context) -> tuple[list[str], bool]:
    fn = ctx.draw(st.sampled_from(["sin", "neg", "abs"]))
    target = ctx.other(lambda t: t.shape == ctx.t.shape and t.dtype == ctx.t.dtype)
    if target is None or target == ctx.x or ctx.draw(st.booleans()):
        return [
            f"{ctx.new_name} = torch.empty_like({ctx.x})",
            f"torch.{fn}({ctx.x}, out={ctx.new_name})",
        ], True
    return [f"torch.{fn}({ctx.x}, out={target})"], False


def _setitem(ctx: Context) -> tuple[list[str], bool]:
    return [f"{ctx.x}[{ctx.index()}] = {ctx.draw(st.sampled_from(['0.5', '-2.0']))}"], False


def _along(dim: int, bounds: str) -> str:
    """An index that slices ``bounds`` (``1:``, ``:-1``) along ``dim`` and keeps the rest."""
    return ", ".join([":"] * dim + [bounds])


def _slice_assign(ctx: Context) -> tuple[list[str], bool] | None:
    # A range of the target written at once (x[.., k:] = ...): a number, a
    # slice of another tensor, or the target's own rows shifted by k, which
    # overlap the rows written (so the source is cloned or computed: see
    # below). Bounds are relative to the end, so a statement means the same
    # where a schedule changes sizes.
    dim = ctx.dim()
    shift = ctx.index(dim)
    written = _along(dim, f"{shift}:")
    head = _along(dim, f":-{shift}" if shift else ":")
    source = ctx.draw(st.sampled_from(["number", "self", "other"]))
    if source == "number":
        value: str = ctx.draw(st.sampled_from(["2", "-0.5"]))
    elif source == "self":
        value = ctx.draw(st.sampled_from(["{x}[{h}].clone()", "{x}[{h}] * 2"])).format(
            x=ctx.x, h=head
        )
    else:
        # Not a view of the target's memory: an overlapping copy has no
        # defined result (eager's overlap check gives up on strided views
        # and copies in its own order), so only a clone may read it.
        other = ctx.other(
            lambda t: (
                t.dim() == ctx.t.dim() and t.dtype == ctx.t.dtype and not _shares_memory(t, ctx.t)
            )
        )
        if other is None:
            return None
        value = f"{other}[{ctx.draw(st.sampled_from([written, head]))}]"
    return [f"{ctx.x}[{written}] = {value}"], False


def _scatter_outplace(ctx: Context) -> tuple[list[str], bool] | None:
    # The out-of-place scatters of a view (slice_scatter, select_scatter):
    # the functional form of a write into a view, which functionalization
    # itself emits and Inductor may compute in the input's own buffer. The
    # source is the target's own slice computed anew, ones, or another
    # tensor's slice of the same size.
    dim = ctx.dim()
    start = ctx.index(dim)
    if ctx.draw(st.booleans()):
        picked = f"{ctx.x}.select({dim}, {start})"
        call = f"torch.select_scatter({ctx.x}, {{src}}, {dim}, {start})"
    else:
        length = ctx.draw(st.integers(1, max(ctx.t.shape[dim] - start, 1)))
        picked = f"{ctx.x}.narrow({dim}, {start}, {length})"
        call = (
            f"torch.slice_scatter({ctx.x}, {{src}}, dim={dim}, start={start}, end={start + length})"
        )
    source = ctx.draw(st.sampled_from(["{p} * 2", "torch.ones_like({p})", "other"]))
    if source == "other":
        other = ctx.other(lambda t: t.shape == ctx.t.shape and t.dtype == ctx.t.dtype)
        if other is None:
            return None
        src = picked.replace(ctx.x, other, 1)
    else:
        src = source.format(p=picked)
    return [f"{ctx.new_name} = {call.format(src=src)}"], True


def _no_grad_update(ctx: Context) -> tuple[list[str], bool]:
    return ["with torch.no_grad():", f"    {ctx.x}.mul_(0.9)"], False


def _resize(ctx: Context) -> tuple[list[str], bool]:
    size = ctx.draw(st.integers(1, max(ctx.t.numel(), 1) * 2))
    if size <= ctx.t.numel():
        # Shrinking keeps the first elements. Bounded by the tensor's size
        # when it runs, not when it was drawn: where a later call's tensor
        # is smaller (an input whose shape a call changes, for good), the
        # resize would grow it and the two sides compare garbage.
        return [f"{ctx.x}.resize_(min({size}, {ctx.x}.numel()))"], False
    # Growing leaves new elements uninitialised: fill them, or the two sides
    # would compare garbage.
    return [f"{ctx.x}.resize_({size}).fill_(2.0)"], False


def _transpose_(ctx: Context) -> tuple[list[str], bool]:
    return [f"{ctx.x}.transpose_(0, {ctx.dim()})"], False


def _unsqueeze_(ctx: Context) -> tuple[list[str], bool]:
    return [f"{ctx.x}.unsqueeze_({ctx.draw(st.integers(0, ctx.t.dim()))})"], False


def _squeeze_(ctx: Context) -> tuple[list[str], bool]:
    return [f"{ctx.x}.squeeze_({ctx.dim()})"], False


def _as_strided_(ctx: Context) -> tuple[list[str], bool]:
    size = ctx.draw(st.integers(1, max(ctx.t.numel(), 1)))
    return [f"{ctx.x}.as_strided_(({size},), (1,))"], False


def _set_(ctx: Context) -> tuple[list[str], bool] | None:
    source = ctx.other(lambda t: t.dtype == ctx.t.dtype)
    return ([f"{ctx.x}.set_({source})"], False) if source is not None else None


def _view_flat(ctx: Context) -> tuple[list[str], bool]:
    how = ctx.draw(st.sampled_from(["view(-1)", "reshape(-1)", "flatten()"]))
    return [f"{ctx.new_name} = {ctx.x}.{how}"], True


def _slice_step(ctx: Context) -> tuple[list[str], bool]:
    dim, start = ctx.dim(), ctx.draw(st.integers(0, 1))
    step = ctx.draw(st.integers(1, 2))
    return [f"{ctx.new_name} = {ctx.x}[{_along(dim, f'{start}::{step}')}]"], True


def _select(ctx: Context) -> tuple[list[str], bool]:
    dim = ctx.dim()
    return [f"{ctx.new_name} = {ctx.x}.select({dim}, {ctx.index(dim)})"], True


def _narrow(ctx: Context) -> tuple[list[str], bool]:
    dim = ctx.dim()
    start = ctx.index(dim)
    length = ctx.draw(st.integers(1, max(ctx.t.shape[dim] - start, 1)))
    return [f"{ctx.new_name} = {ctx.x}.narrow({dim}, {start}, {length})"], True


def _transpose(ctx: Context) -> tuple[list[str], bool]:
    how = ctx.draw(
        st.sampled_from(["t()", "transpose(0, -1)", "permute(*reversed(range({x}.dim())))"])
    )
    return [f"{ctx.new_name} = {ctx.x}.{how.format(x=ctx.x)}"], True


def _unsqueeze(ctx: Context) -> tuple[list[str], bool]:
    return [f"{ctx.new_name} = {ctx.x}.unsqueeze({ctx.draw(st.integers(0, ctx.t.dim()))})"], True


def _squeeze(ctx: Context) -> tuple[list[str], bool]:
    return [f"{ctx.new_name} = {ctx.x}.squeeze({ctx.dim()})"], True


def _expand(ctx: Context) -> tuple[list[str], bool]:
    return [f"{ctx.new_name} = {ctx.x}.unsqueeze(0).expand(2, *{ctx.x}.shape)"], True


def _split(ctx: Context) -> tuple[list[str], bool]:
    how = ctx.draw(st.sampled_from(["unbind(0)", "split(1)", "chunk(2)"]))
    return [f"{ctx.new_name} = {ctx.x}.{how}[{ctx.index()}]"], True


def _as_strided(ctx: Context) -> tuple[list[str], bool]:
    # Strides other than 1 skip elements (a strided input's functional value
    # must keep them), and as_strided_copy reads the same geometry as a copy.
    # The offset is the tensor's own either way; read out (a graph break
    # under Dynamo) or left to default.
    stride = ctx.draw(st.sampled_from([1, 2]))
    size = ctx.draw(st.integers(1, max(-(-ctx.t.numel() // stride), 1)))
    how = ctx.draw(st.sampled_from(["{x}.as_strided", "torch.as_strided_copy"]))
    offset = ctx.draw(st.sampled_from([f", {ctx.x}.storage_offset()", ""]))
    call = how.format(x=ctx.x)
    first = "" if call.startswith(ctx.x) else f"{ctx.x}, "
    return [f"{ctx.new_name} = {call}({first}({size},), ({stride},){offset})"], True


#: ``to`` on any run: on a CPU run these copy or return the tensor itself;
#: on a CUDA run the ``cpu()`` forms copy device to host.
_TO_DEVICE_FORMS = (
    "{x}.cpu()",
    "{x}.to('cpu')",
    "{x}.cpu().to({d}.device)",
    "{x}.to({d}.device, copy=True)",
    "{x}.to('cpu', non_blocking=True)",
)


def _to_device(ctx: Context) -> tuple[list[str], bool]:
    form = ctx.draw(st.sampled_from(list(_TO_DEVICE_FORMS)))
    device_source = next((v.name for v in ctx.variables if v.origin == "input"), ctx.x)
    return [f"{ctx.new_name} = {form.format(x=ctx.x, d=device_source)}"], True


#: What ``to`` adds on a CUDA run, where the program's inputs live on the GPU:
#: real host-device traffic in both directions. ``{d}`` is an input, so
#: ``{d}.device`` is the run's device (the host while drawing); the forms
#: naming CUDA itself are drawn only where torch can run them (a statement
#: torch rejects while drawing is dropped), i.e. on a machine with a GPU.
_CUDA_TRANSFERS = (
    # Device to host, then back asynchronously from pageable memory.
    "{x}.cpu().to({d}.device, non_blocking=True)",
    # Host arithmetic between the two copies: a graph with CPU ops in it.
    "({x}.cpu() * 2).to({d}.device)",
    # A 0-dim host tensor meeting a device tensor (CPU scalars are allowed).
    "{x} + {x}.sum().cpu()",
    "{x} * {x}.flatten()[0].cpu()",
    # Pinned host memory, then a non-blocking copy to the device.
    "{x}.cpu().pin_memory().to({d}.device, non_blocking=True)",
    "{x}.cpu().cuda()",
    "{x}.cpu().cuda(non_blocking=True)",
    "{x}.cpu().to('cuda')",
    "{x}.cpu().to('cuda', non_blocking=True)",
)


def _to_device_cuda(ctx: Context) -> tuple[list[str], bool]:
    """``to`` on a CUDA run: the host-only forms, then transfers to and from the GPU.

    A separate builder, not a branch of :func:`_to_device`: a CPU run keeps
    drawing exactly the programs it drew before (tests and databases pin them).
    """
    forms = _TO_DEVICE_FORMS + _CUDA_TRANSFERS
    form = ctx.draw(st.sampled_from(forms))
    device_source = next((v.name for v in ctx.variables if v.origin == "input"), ctx.x)
    return [f"{ctx.new_name} = {form.format(x=ctx.x, d=device_source)}"], True


def _to_dtype(ctx: Context) -> tuple[list[str], bool]:
    dtype = ctx.draw(st.sampled_from(["torch.float64", "torch.float32"]))
    return [f"{ctx.new_name} = {ctx.x}.to({dtype})"], True


def _backward(ctx: Context) -> tuple[list[str], bool]:
    return [f"{ctx.x}.sum().backward(retain_graph=True)"], False


def _autograd_grad(ctx: Context) -> tuple[list[str], bool] | None:
    # With respect to a leaf, or to an intermediate: a graph break before
    # the grad makes that intermediate and the differentiated value sibling
    # outputs of one compiled graph, and the edge between them must survive.
    # With create_graph the gradient is itself differentiable, and the
    # check's backward differentiates through it again (a double backward).
    leaves = [v.name for v in ctx.variables if v.tensor is not None and _leaf_with_grad(v)]
    intermediates = [
        v.name
        for v in ctx.variables
        if v.tensor is not None and _nonleaf_with_grad(v) and v.tensor.dtype.is_floating_point
    ]
    if not leaves and not intermediates:
        return None
    # Drawn from everything, a target is rarely one the value was computed
    # from, and then both sides agree on zeros (allow_unused): half the time,
    # one of the intermediates the value depends on is chosen where there is one.
    fed = [
        v.name
        for v in ctx.variables
        if v.name in intermediates and v.tensor is not None and _computed_from(ctx.t, v.tensor)
    ]
    target = ctx.draw(
        st.sampled_from(fed if fed and ctx.draw(st.booleans()) else leaves + intermediates)
    )
    create_graph = " create_graph=True," if ctx.draw(st.booleans()) else ""
    return [
        f"{ctx.new_name} = torch.autograd.grad({ctx.x}.sum(), {target}, retain_graph=True,"
        f"{create_graph} allow_unused=True, materialize_grads=True)[0]"
    ], True


def _computed_from(value: torch.Tensor, source: torch.Tensor, limit: int = 64) -> bool:
    """Whether ``source``'s autograd node is on ``value``'s graph (within ``limit``
    nodes of it): a gradient of ``value`` with respect to ``source`` is then not zero
    by construction."""
    goal, start = source.grad_fn, value.grad_fn
    if goal is None or start is None:
        return False
    seen: set[int] = set()
    stack = [start]
    while stack and len(seen) < limit:
        node = stack.pop()
        if node is goal:
            return True
        if id(node) not in seen:
            seen.add(id(node))
            stack.extend(parent for parent, _ in node.next_functions if parent is not None)
    return False


def _detach(ctx: Context) -> tuple[list[str], bool]:
    how = ctx.draw(st.sampled_from(["detach()", "detach().requires_grad_()"]))
    return [f"{ctx.new_name} = {ctx.x}.{how}"], True


def _no_grad_block(ctx: Context) -> tuple[list[str], bool]:
    return ["with torch.no_grad():", f"    {ctx.new_name} = {ctx.x} * 2"], True


def _hook(ctx: Context) -> tuple[list[str], bool]:
    if _is_leaf(ctx.t) or ctx.t._is_view():
        # Hooks go on intermediates that are not views: take one step away
        # first. Eager torch 2.13 segfaults registering a hook on a view whose
        # base was written in place since (pytorch/pytorch#196459), which
        # would kill the process drawing the program.
        return [
            f"{ctx.new_name} = {ctx.x} * 1",
            f"{ctx.new_name}.register_hook(lambda grad: grad * 2)",
        ], True
    return [f"{ctx.x}.register_hook(lambda grad: grad * 2)"], False


def _read_grad(ctx: Context) -> tuple[list[str], bool]:
    return [
        f"{ctx.new_name} = torch.zeros_like({ctx.x}) if {ctx.x}.grad is None else {ctx.x}.grad * 1"
    ], True


#: How eager's warning on reading an intermediate's ``.grad`` begins.
NON_LEAF_GRAD_WARNING = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed"
)


def _branch_on_grad(ctx: Context) -> tuple[list[str], bool]:
    # A Python branch on whether an intermediate's ``.grad`` is set (it never
    # is without retain_grad): the compiled frame must read the attribute as
    # eager does. A leaf's ``.grad`` is read_grad's: from a leaf, one step
    # away first, as for hooks. Under ``-W error`` eager's warning makes such
    # a program invalid, never a failure.
    if _is_leaf(ctx.t):
        return [
            f"{ctx.new_name} = {ctx.x} * 1",
            f"{ctx.new_name} = {ctx.new_name} * (2 if {ctx.new_name}.grad is None else 3)",
        ], True
    return [f"{ctx.new_name} = {ctx.x} * (2 if {ctx.x}.grad is None else 3)"], True


def _zero_grad(ctx: Context) -> tuple[list[str], bool]:
    if ctx.draw(st.booleans()):
        return [f"{ctx.x}.grad = None"], False
    return [f"if {ctx.x}.grad is not None:", f"    {ctx.x}.grad.zero_()"], False


def _dropout(ctx: Context) -> tuple[list[str], bool]:
    p = ctx.draw(st.sampled_from(["0.5", "0.2"]))
    return [f"{ctx.new_name} = torch.nn.functional.dropout({ctx.x}, {p})"], True


def _bernoulli(ctx: Context) -> tuple[list[str], bool]:
    return [f"{ctx.new_name} = torch.bernoulli(torch.full_like({ctx.x}, 0.5))"], True


def _python_random(ctx: Context) -> tuple[list[str], bool] | None:
    # A number drawn from a Python random.Random argument: Dynamo must
    # advance the object's state as eager does, not replay the draw it
    # traced.
    generators = [v.name for v in ctx.variables if v.origin == "random"]
    if not generators:
        return None
    source = ctx.draw(st.sampled_from(generators))
    how = ctx.draw(
        st.sampled_from(
            ["{x} + {r}.random()", "{x} * {r}.uniform(0.5, 1.5)", "{x} + {r}.randint(1, 9)"]
        )
    )
    return [f"{ctx.new_name} = {how.format(x=ctx.x, r=source)}"], True


_HOLDER_STEPS = (
    # A count rebound, then read.
    ("{h}.count += 1", "{v} = {x} * {h}.count"),
    # A branch on which sentinel is current, then the other made current.
    (
        "{v} = {x} + 1 if {h}.state is {h}.on else {x} * 3",
        "{h}.state = {h}.off if {h}.state is {h}.on else {h}.on",
    ),
    # A list appended to, its length read.
    ("{h}.items.append({h}.count)", "{v} = {x} * len({h}.items)"),
    # The same list appended to by a method of an object built in the call,
    # whose class (built outside it) closes over the list.
    ("{h}.Recorder().note({h}.count)", "{v} = {x} * len({h}.items)"),
    # setattr by name.
    ("setattr({h}, 'count', {h}.count + 2)", "{v} = {x} + {h}.count"),
    # A store or delete Python rejects, caught by the program: eager runs the
    # handler, and compiled code must not replay the rejected store later.
    *(
        (
            "try:",
            f"    {store}",
            f"except {error}:",
            "    {h}.count += 1",
            "{v} = {x} + {h}.count",
        )
        for store, error in (
            ("{h}.__weakref__ = None", "AttributeError"),
            ("{h}.__dict__ = None", "TypeError"),
            ("del {h}.missing", "AttributeError"),
        )
    ),
)


def _python_state(ctx: Context) -> tuple[list[str], bool] | None:
    # State kept in a plain Python object argument across calls: Dynamo must
    # guard the attributes it read (a branch taken on which object is
    # current) and replay the writes, as eager makes them every call.
    holders = [v.name for v in ctx.variables if v.origin == "holder"]
    if not holders:
        return None
    holder = ctx.draw(st.sampled_from(holders))
    steps = ctx.draw(st.sampled_from(_HOLDER_STEPS))
    return [line.format(h=holder, v=ctx.new_name, x=ctx.x) for line in steps], True


#: ``module_state`` steps: state kept in a module global that the program
#: rebinds; Dynamo must replay the store and read the rebound value everywhere,
#: inside a nested_compile_region (traced once, reused) too. Each step rebinds
#: the module's ``STATE`` before it reads it: both sides of a check run one
#: module's functions, so a read of state bound by an earlier call would read
#: the other side's; bound first, each read sees only its own call's binding.
_MODULE_STATE_STEPS = (
    # Rebound, then read inside a nested_compile_region.
    ("set_state({x})", "{v} = region_state({x})"),
    # Rebound to a value computed here, then read directly.
    ("set_state({x} * 2)", "{v} = {x} + STATE"),
    # Read through a plain helper.
    ("set_state({x} + 1)", "{v} = get_state() * {x}"),
    # A region called again after the state it reads was rebound: a region is
    # traced once and reused, which is what it is for.
    (
        "set_state({x})",
        "{v} = region_state({x})",
        "set_state({v} + 1)",
        "{v} = {v} + region_state({x})",
    ),
)


def _steps_one_of(steps: tuple[tuple[str, ...], ...]) -> Builder:
    """A builder that draws one of ``steps`` (lines naming the target ``{x}`` and
    the new variable ``{v}``) on the target."""

    def build(ctx: Context) -> tuple[list[str], bool]:
        chosen = ctx.draw(st.sampled_from(steps))
        return [line.format(v=ctx.new_name, x=ctx.x) for line in chosen], True

    return build


#: ``local_class`` steps: a class built inside the call, its state used at once.
#: Dynamo traces a class statement only under a setting (the program then
#: compiles with it: see generate.TRACE_BUILD_CLASS) and must keep what the
#: call does to the class's state, as eager does.
_LOCAL_CLASS_STEPS = (
    # A class-level list appended to, its length read.
    ("class Local:", "    items = []", "Local.items.append(1)", "{v} = {x} * len(Local.items)"),
    # A class-level count rebound, then read.
    ("class Local:", "    count = 0", "Local.count += 1", "{v} = {x} + Local.count"),
    # A method of an instance of it.
    ("class Local:", "    def scale(self, t):", "        return t * 2", "{v} = Local().scale({x})"),
    # A class-level list appended to on both sides of a graph break: the
    # resumed code must see the class as the first graph left it.
    (
        "class Local:",
        "    items = []",
        "Local.items.append(1)",
        "torch._dynamo.graph_break()",
        "Local.items.append(2)",
        "{v} = {x} * len(Local.items)",
    ),
)


def _where_scalar(ctx: Context) -> tuple[list[str], bool] | None:
    scalars = [v.name for v in ctx.variables if v.origin == "scalar"]
    if not scalars:
        return None
    s = ctx.draw(st.sampled_from(scalars))
    return [f"{ctx.new_name} = torch.where({ctx.x} > 0, {ctx.x}, {ctx.x} * {s})"], True


def _index_read(ctx: Context) -> tuple[list[str], bool]:
    how = ctx.draw(st.sampled_from(["int", "tensor", "mask"]))
    if how == "int":
        return [f"{ctx.new_name} = {ctx.x}[{ctx.index()}]"], True
    if how == "tensor":
        i, j = ctx.index(), ctx.index()
        return [f"{ctx.new_name} = {ctx.x}[torch.tensor([{i}, {j}, {i}])]"], True
    return [f"{ctx.new_name} = {ctx.x}[{ctx.x} > 0]"], True


def _index_write(ctx: Context) -> tuple[list[str], bool]:
    # Duplicate indices write the same value, so the result is defined.
    value = ctx.draw(st.sampled_from(["0.5", "-2.0"]))
    if ctx.draw(st.booleans()):
        return [f"{ctx.x}[{ctx.x} > 0] = {value}"], False
    i, j = ctx.index(), ctx.index()
    return [f"{ctx.x}[torch.tensor([{i}, {j}, {i}])] = {value}"], False


def _fresh_factory(ctx: Context) -> tuple[list[str], bool]:
    shape = ctx.draw(st.lists(st.integers(0, 3), min_size=1, max_size=4))
    dims = ", ".join(map(str, shape))
    grad = ", requires_grad=True" if ctx.draw(st.integers(0, 3)) == 3 else ""
    maker = ctx.draw(st.sampled_from(["zeros", "ones", "arange", "tensor", "full", "new"]))
    device = f"device={ctx.x}.device"
    if maker == "new":
        # Made from the target (its dtype and device): new_zeros, new_full.
        how = ctx.draw(st.sampled_from([f"new_zeros(({dims},)", f"new_full(({dims},), 1"]))
        grad = grad if ctx.t.is_floating_point() else ""
        return [f"{ctx.new_name} = {ctx.x}.{how}{grad})"], True
    if maker == "arange":
        return [
            f"{ctx.new_name} = torch.arange({ctx.draw(st.integers(0, 6))}, dtype=torch.float32,"
            f" {device}{grad})"
        ], True
    if maker == "tensor":
        values = ctx.draw(st.lists(st.sampled_from(["1.0", "-0.5", "2.0"]), min_size=1, max_size=3))
        return [f"{ctx.new_name} = torch.tensor([{', '.join(values)}], {device}{grad})"], True
    fill = ", 1.5" if maker == "full" else ""
    size = f"({dims},)" if maker == "full" else dims
    return [f"{ctx.new_name} = torch.{maker}({size}{fill}, {device}{grad})"], True


def _index_outplace(ctx: Context) -> tuple[list[str], bool]:
    # Out of place, on any tensor: expanded (stride-0) inputs included.
    i, j = ctx.index(), ctx.index()
    op = ctx.draw(st.sampled_from(["index_add", "index_copy", "index_put"]))
    if op == "index_put":
        accumulate = ctx.draw(st.booleans())
        index = f"torch.tensor([{i}, {j}, {i}])" if accumulate else f"torch.tensor([{i}])"
        return [
            f"{ctx.new_name} = {ctx.x}.index_put(({index},),"
            f" torch.tensor(1.0, dtype={ctx.x}.dtype), accumulate={accumulate})"
        ], True
    return [
        f"{ctx.new_name} = {ctx.x}.{op}(0, torch.tensor([{i}]), torch.ones_like({ctx.x}[:1]))"
    ], True


def _out_more(ctx: Context) -> tuple[list[str], bool]:
    # out= where it is unusual: an empty out that torch resizes, or the
    # input itself as out (aliasing what it reads).
    op = ctx.draw(st.sampled_from(["addcmul", "minimum", "amin"]))
    call = {
        "addcmul": f"torch.addcmul({ctx.x}, {ctx.x}, {ctx.x}, value=0.5, out={{out}})",
        "minimum": f"torch.minimum({ctx.x}, {ctx.x} * 0.5, out={{out}})",
        "amin": f"torch.amin({ctx.x}, dim=0, keepdim=True, out={{out}})",
    }[op]
    if op != "amin" and ctx.draw(st.booleans()):
        return [call.format(out=ctx.x)], False
    return [
        f"{ctx.new_name} = {ctx.x}.new_empty(0)",
        call.format(out=ctx.new_name),
    ], True


def _reshape_op(ctx: Context) -> tuple[list[str], bool]:
    how = ctx.draw(
        st.sampled_from(
            [
                "flip(0)",
                "contiguous()",
                "reshape(-1)",
                "movedim(0, -1)",
                "permute({order})",
                "expand_as({x})",
                "view({view_dtype})",
                "split(1, dim=-1)[-1]",
                "chunk(2)[0]",
            ]
        )
    )
    # Same-size dtypes, and ones of another element size (the last dim is
    # rescaled: int64 -> int32 doubles it), which reads and writes through
    # the view must address alike.
    view_dtypes = {
        torch.float32: ["torch.int32", "torch.float16"],
        torch.float64: ["torch.int64", "torch.int32"],
        torch.int64: ["torch.float64", "torch.int32"],
        # And back: a view of another element size, viewed as the original.
        torch.int32: ["torch.float32", "torch.int64"],
        torch.bool: ["torch.uint8"],
    }.get(ctx.t.dtype, ["torch.int32"])
    view_dtype = view_dtypes[0]
    if "{view_dtype}" in how:
        view_dtype = ctx.draw(st.sampled_from(view_dtypes))
    # A literal order: Dynamo 2.13 unpacks permute(*range(n - 1, -1, -1))
    # wrongly for every input (recorded in the baseline), which would crowd
    # out everything else this entry draws.
    order = ""
    if "{order}" in how:
        order = ", ".join(map(str, ctx.draw(st.permutations(range(ctx.t.dim())))))
    text = how.format(x=ctx.x, view_dtype=view_dtype, order=order)
    return [f"{ctx.new_name} = {ctx.x}.{text}"], True


def _combine(ctx: Context) -> tuple[list[str], bool] | None:
    op = ctx.draw(st.sampled_from(["cat", "stack", "gather", "index_select"]))
    if op == "gather":
        index = f"torch.zeros_like({ctx.x}, dtype=torch.long)"
        return [f"{ctx.new_name} = torch.gather({ctx.x}, 0, {index})"], True
    if op == "index_select":
        i = ctx.index()
        return [f"{ctx.new_name} = {ctx.x}.index_select(0, torch.tensor([{i}, {i}]))"], True
    other = ctx.other(lambda t: t.shape == ctx.t.shape and t.dtype == ctx.t.dtype)
    if other is None:
        return None
    return [f"{ctx.new_name} = torch.{op}([{ctx.x}, {other}])"], True


def _reduce(ctx: Context) -> tuple[list[str], bool]:
    op = ctx.draw(st.sampled_from(["mean", "amax", "argmax", "argmin", "sum"]))
    keepdim = ctx.draw(st.booleans())
    return [f"{ctx.new_name} = {ctx.x}.{op}({ctx.dim()}, keepdim={keepdim})"], True


# Ops that may return their input itself rather than a new tensor.
# Not dropout(training=False): torch 2.13 compiles it to a copy where
# eager returns the input (pytorch/pytorch#115249, recorded in the
# baseline four ways); drawn, it re-finds that one bug under every op mix.
_maybe_same = _assign_one_of("{x}.contiguous()", "{x}.to({x}.dtype)", "{x}.type_as({x})")

# Python values read off a tensor (size, rank, requires_grad, is_inference,
# is_contiguous, stride, storage offset, whether it is a view), used by
# later statements: Dynamo guards on them or specialises, and reads them
# off its fake tensors, whose layout must be eager's.
_metadata_read = _assign_one_of(
    "{x}.size(0) if {x}.dim() else 1",
    "{x}.dim() + 1",
    "{x}.numel()",
    "2 if {x}.requires_grad else 3",
    "2 if {x}.is_inference() else 3",
    "2 if {x}.is_contiguous() else 3",
    "{x}.stride(0) + 1 if {x}.dim() else 1",
    "{x}.storage_offset() + 1",
    "2 if {x}._is_view() else 3",
)

# Definitions: strategies/templates.py (the program carries them).
_autograd_function = _assign_one_of(
    "SavedScale.apply({x})",
    "OnceScale.apply({x})",
    "WithArgmax.apply({x})[0]",
    "DirtyDouble.apply({x})",
    "StraightSin.apply({x})",
    "SavedOutputWritten.apply({x})",
    "KeptThenWritten.apply({x})",
)


def _grad_mode(ctx: Context) -> tuple[list[str], bool]:
    # Grad re-enabled inside no_grad: the nested mode is what records.
    return [
        "with torch.no_grad():",
        "    with torch.enable_grad():",
        f"        {ctx.new_name} = {ctx.x} * 2",
    ], True


def _complex_viewable(var: Var) -> bool:
    tensor = var.tensor
    return tensor is not None and (
        tensor.dtype.is_complex
        or (
            tensor.dtype in (torch.float32, torch.float64)
            and tensor.dim() >= 1
            and tensor.shape[-1] == 2
        )
    )


# A conjugate view is lazy (a bit on the tensor, not a copy): a write
# through it lands conjugated in its base.
_real_views = _assign_one_of(
    "{x}.real", "{x}.imag", "torch.view_as_real({x})", "{x}.conj()", "{x}.conj().imag"
)


def _complex_view(ctx: Context) -> tuple[list[str], bool] | None:
    if not ctx.t.dtype.is_complex:
        return [f"{ctx.new_name} = torch.view_as_complex({ctx.x})"], True
    return _real_views(ctx)


def _zero_size(ctx: Context) -> tuple[list[str], bool]:
    return [f"{ctx.new_name} = {ctx.x}.narrow({ctx.dim()}, 0, 0)"], True


def _custom_op(ctx: Context) -> tuple[list[str], bool]:
    if ctx.draw(st.booleans()):
        return [f"torch.ops.cgraph.add_one_({ctx.x})"], False
    return [f"{ctx.new_name} = torch.ops.cgraph.scaled({ctx.x})"], True


def _custom_set(ctx: Context) -> tuple[list[str], bool]:
    # set_ inside a custom op, to a tensor of the same shape or flattened:
    # the op's declared mutation changes the argument's size, not only its data.
    source = ctx.draw(st.sampled_from(["{x}.reshape(-1) * 3", "{x} * 3"]))
    return [f"torch.ops.cgraph.set_to_({ctx.x}, {source.format(x=ctx.x)})"], False


def _data_assign(ctx: Context) -> tuple[list[str], bool]:
    how = ctx.draw(st.sampled_from(["{x}.data * 2", "{x}.data.flip(0)", "torch.zeros_like({x})"]))
    return [f"{ctx.x}.data = {how.format(x=ctx.x)}"], False


def _module_call(ctx: Context) -> tuple[list[str], bool] | None:
    modules = [v.name for v in ctx.variables if v.origin == "module"]
    if not modules:
        return None
    return [f"{ctx.new_name} = {ctx.draw(st.sampled_from(modules))}({ctx.x})"], True


def _writable_tensor(tensor: torch.Tensor) -> bool:
    return not _is_grad_leaf(tensor) and torch._debug_has_internal_overlap(tensor) != 1


def _foreach(ctx: Context) -> tuple[list[str], bool]:
    # In place, the list's second entry is a tensor of other memory: one op
    # writes two tensors, as fused optimizer updates do. An in-place list
    # whose entries overlap (the target twice, or with a view of it) is left
    # out: eager writes a shared element once per entry and torch 2.13's
    # compile once in all, in every program (recorded in the baseline), so
    # it would re-find that one bug under every hazard it is drawn with. Out
    # of place, the entries may overlap (the op reads them, never writes).
    op = ctx.draw(st.sampled_from(["_foreach_add_", "_foreach_mul_", "_foreach_add"]))
    if op != "_foreach_add":
        apart = ctx.other(
            lambda t: (
                t.dtype == ctx.t.dtype and _writable_tensor(t) and not _shares_memory(t, ctx.t)
            )
        )
        if apart is not None:
            value = "1.5" if op == "_foreach_add_" else "2.0"
            return [f"torch.{op}([{ctx.x}, {apart}], {value})"], False
    second = ctx.x
    partner = ctx.draw(st.sampled_from(["self", "view", "other"]))
    if partner == "view" and ctx.t.dim() >= 1:
        second = f"{ctx.x}[0]"
    elif partner == "other":
        second = ctx.other(lambda t: t.dtype == ctx.t.dtype) or ctx.x
    return [f"{ctx.new_name} = torch._foreach_add([{ctx.x}, {second}], 1.5)[-1]"], True


def _shares_memory(tensor: torch.Tensor, other: torch.Tensor) -> bool:
    """Whether the two tensors are views of one storage (an empty one counts as shared)."""
    return tensor.untyped_storage().data_ptr() == other.untyped_storage().data_ptr()


def _checkpoint(ctx: Context) -> tuple[list[str], bool]:
    # No random body: torch 2.13 refuses RNG ops in a checkpointed region
    # under compile (recorded in the baseline), which every such draw re-finds.
    body = ctx.draw(st.sampled_from(["checkpointed_sin", "checkpointed_inplace"]))
    return [
        f"{ctx.new_name} = torch.utils.checkpoint.checkpoint({body}, {ctx.x}, use_reentrant=False)"
    ], True


def _autocast(ctx: Context) -> tuple[list[str], bool]:
    product = (
        f"{ctx.x} @ {ctx.x}.mT"
        if ctx.t.dim() >= 2
        else f"{ctx.x}.unsqueeze(-1) @ {ctx.x}.unsqueeze(0)"
    )
    # A bfloat16 region, or one that turns autocast off (a precise matmul inside
    # a mixed-precision forward, when the program runs under AUTOCAST).
    region = (
        "dtype=torch.bfloat16"
        if ctx.draw(st.sampled_from(["bfloat16", "off"])) == "bfloat16"
        else "enabled=False"
    )
    lines = [
        f'with torch.autocast("{ctx.t.device.type}", {region}):',
        f"    {ctx.new_name} = {product}",
    ]
    then = ctx.draw(st.sampled_from(["", "result", "target"]))
    if then == "result":
        lines.append(f"    {ctx.new_name}.add_(1)")
    elif then == "target" and _writable_tensor(ctx.t):
        lines.append(f"    {ctx.x}.mul_(2)")
    return lines, True


def _retain_grad(ctx: Context) -> tuple[list[str], bool]:
    return [
        f"{ctx.x}.retain_grad()",
        f"{ctx.x}.sum().backward(retain_graph=True)",
        f"{ctx.new_name} = {ctx.x}.grad",
    ], True


def _memory_format(ctx: Context) -> tuple[list[str], bool]:
    how = ["torch.empty_like({x}).copy_({x})", "{x}.clone(memory_format=torch.preserve_format)"]
    if ctx.t.dim() == 4:
        how += [
            "{x}.contiguous(memory_format=torch.channels_last)",
            "{x}.to(memory_format=torch.channels_last)",
        ]
    return [f"{ctx.new_name} = {ctx.draw(st.sampled_from(how)).format(x=ctx.x)}"], True


# Results whose size depends on the values (Dynamo graph-breaks or traces
# unbacked sizes), and a tensor rebuilt from Python values. Not unique():
# it has no derivative, so most draws on a tensor that requires grad fail.
_data_dependent = _assign_one_of(
    "{x}.nonzero()",
    "torch.masked_select({x}, {x} > 0)",
    "{x}.flatten()[: int(({x} > 0).sum())]",
    "torch.tensor({x}.tolist(), dtype={x}.dtype)",
)


def _post_accumulate_hook(ctx: Context) -> tuple[list[str], bool]:
    hook = ctx.draw(st.sampled_from(["halve_grad_in_place", "step_in_backward"]))
    return [f"{ctx.x}.register_post_accumulate_grad_hook({hook})"], False


def _functorch(ctx: Context) -> tuple[list[str], bool]:
    how = [
        "torch.vmap(torch.sin)({x})",
        "torch.vmap(lambda t: t * t.sum())({x})",
        "torch.func.grad(lambda t: t.sin().sum())({x})",
        # Forward mode: dual tensors in place of a backward.
        "torch.func.jvp(torch.sin, ({x},), (torch.ones_like({x}),))[1]",
        "torch.func.jacrev(torch.sin)({x}.reshape(-1)[:2])",
        # A custom Function under the transforms: its own backward and jvp.
        "torch.func.grad(lambda t: StraightSin.apply(t).sum())({x})",
        "torch.func.jvp(StraightSin.apply, ({x},), (torch.ones_like({x}),))[1]",
    ]
    if _writable_tensor(ctx.t):
        # In place through vmap: each batch slice of the target is written.
        how.append("torch.vmap(lambda t: t.mul_(2))({x})")
    return [f"{ctx.new_name} = {ctx.draw(st.sampled_from(how)).format(x=ctx.x)}"], True


def _grad_mode_switch(ctx: Context) -> tuple[list[str], bool]:
    # Modes switched by call or by a block nested in whatever mode is
    # ambient (GRAD_MODE): Dynamo must restore the mode it found.
    how = ctx.draw(st.sampled_from(["inference_false", "set_grad_calls", "set_grad_block"]))
    if how == "set_grad_calls":
        return [
            "torch.set_grad_enabled(False)",
            f"{ctx.new_name} = {ctx.x} * 2",
            "torch.set_grad_enabled(True)",
        ], True
    block = (
        "with torch.inference_mode(False):"
        if how == "inference_false"
        else "with torch.set_grad_enabled(True):"
    )
    return [block, f"    {ctx.new_name} = {ctx.x} * 2"], True


def _inference_block(ctx: Context) -> tuple[list[str], bool]:
    return ["with torch.inference_mode():", f"    {ctx.new_name} = {ctx.x} * 2"], True


def _leaf_holding_grad(var: Var) -> bool:
    """A leaf that requires grad and holds one: what an optimizer step updates."""
    tensor = var.tensor
    return tensor is not None and _is_grad_leaf(tensor) and tensor.grad is not None


#: A wide integer: taken modulo a few choices, it spreads draws evenly where
#: ``sampled_from`` would favour some, and still shrinks to the first.
_SPREAD = st.integers(0, 2**16 - 1)


def _parameter_update(ctx: Context) -> tuple[list[str], bool]:
    # A hand-written step as training loops write it: the augmented assignment
    # rebinds the name to the in-place op's result (one Dynamo gives a variable of
    # its own), the method form does not; then the gradient is cleared as loops do.
    updates = (
        "{x} -= 0.1 * {x}.grad",
        "{x}.sub_(0.1 * {x}.grad)",
        "{x}.add_({x}.grad, alpha=-0.1)",
        "{x}.mul_(0.99).sub_({x}.grad, alpha=0.1)",
        "torch._foreach_add_([{x}], [{x}.grad], alpha=-0.1)",
    )
    clears = (
        "{x}.grad = None",
        "",
        "{x}.grad.zero_()",
        "{x}.grad = torch.zeros_like({x})",
        "torch._foreach_zero_([{x}.grad])",
    )
    # One draw for the pair, spread evenly (a wide integer modulo the choices):
    # two draws of one kind come out alike too often to meet every pair.
    update, clear = [(u, c) for u in updates for c in clears][
        ctx.draw(_SPREAD) % (len(updates) * len(clears))
    ]
    lines = ["with torch.no_grad():", f"    {update.format(x=ctx.x)}"]
    return lines + ([clear.format(x=ctx.x)] if clear else []), False


def _optimizer_step(ctx: Context) -> tuple[list[str], bool]:
    # torch.optim built inside the step, as a compiled training step may: its step
    # (foreach or per tensor; momentum or Adam's moments), then its zero_grad.
    optimizer = ctx.draw(
        st.sampled_from(
            [
                "torch.optim.SGD([{x}], lr=0.1)",
                "torch.optim.SGD([{x}], lr=0.1, momentum=0.9, foreach=False)",
                "torch.optim.Adam([{x}], lr=0.1)",
                "torch.optim.AdamW([{x}], lr=0.1, weight_decay=0.1, foreach=True)",
            ]
        )
    )
    none = ctx.draw(st.sampled_from(["True", "False"]))
    return [
        f"{ctx.new_name} = {optimizer.format(x=ctx.x)}",
        f"{ctx.new_name}.step()",
        f"{ctx.new_name}.zero_grad(set_to_none={none})",
    ], False


#: A learning-rate schedule stepped after its optimizer, as every loop does:
#: the next step's rate is read from the optimizer's param group.
_SCHEDULERS = (
    "torch.optim.lr_scheduler.StepLR({o}, 1, gamma=0.5)",
    "torch.optim.lr_scheduler.LambdaLR({o}, lambda epoch: 1.0 / (epoch + 1))",
    "torch.optim.lr_scheduler.LinearLR({o}, start_factor=0.5, total_iters=2)",
)


def _scheduled_step(ctx: Context) -> tuple[list[str], bool]:
    # An optimizer with a rate schedule, both built inside the step, the rate a
    # float or a tensor (what a compiled optimizer asks for, so that a changed
    # rate is a new value and not a recompile); two steps, so the second runs
    # at the rate the schedule set.
    lr = ctx.draw(st.sampled_from(["0.1", "torch.tensor(0.1)"]))
    optimizer = ctx.draw(
        st.sampled_from(
            [
                "torch.optim.SGD([{x}], lr={lr}, momentum=0.9)",
                "torch.optim.Adam([{x}], lr={lr})",
            ]
        )
    )
    schedule = ctx.draw(st.sampled_from(_SCHEDULERS))
    o = ctx.new_name
    return [
        f"{o} = {optimizer.format(x=ctx.x, lr=lr)}",
        f"{o}_schedule = {schedule.format(o=o)}",
        f"{o}.step()",
        f"{o}_schedule.step()",
        f"{o}.step()",
        f"{o}.zero_grad()",
    ], False


def _scaled_step(ctx: Context) -> tuple[list[str], bool]:
    # Mixed-precision training's loss scaling: the loss scaled up before its
    # backward, the gradients unscaled and checked for infinities before the
    # step, the scale updated after (GradScaler's own calls, or the fused
    # kernels it is made of).
    device = ctx.t.device.type
    o = ctx.new_name
    how = ctx.draw(st.sampled_from(["scaler", "kernels"]))
    if how == "scaler":
        return [
            f"{o} = torch.optim.SGD([{ctx.x}], lr=0.1)",
            f'{o}_scaler = torch.amp.GradScaler("{device}", init_scale=4.0)',
            f"{o}_scaler.scale(({ctx.x} * {ctx.x}).sum()).backward()",
            f"{o}_scaler.step({o})",
            f"{o}_scaler.update()",
            f"{o}.zero_grad()",
        ], False
    return [
        f"({ctx.x} * {ctx.x}).sum().mul(4.0).backward()",
        f"{o} = torch.zeros(())",
        f"{o}_inv = torch.full((), 0.25)",
        f"torch._amp_foreach_non_finite_check_and_unscale_([{ctx.x}.grad], {o}, {o}_inv)",
        "with torch.no_grad():",
        f"    {ctx.x}.sub_(0.1 * {ctx.x}.grad * (1 - {o}))",
        f"{ctx.x}.grad = None",
    ], False


def _ema_update(ctx: Context) -> tuple[list[str], bool] | None:
    # An exponential moving average of a parameter, kept in a tensor of its
    # own (a model's EMA copy) and written in place after the update.
    # A parameter of another shape is averaged to one number (the copy then
    # tracks its mean), so that a step's buffer always finds one to follow.
    source = ctx.other(lambda t: t.requires_grad and t.is_floating_point())
    if source is None or source == ctx.x:
        return None
    followed = next(v.tensor for v in ctx.variables if v.name == source)
    if followed is None or followed.shape != ctx.t.shape:
        source = f"{source}.mean()"
    how = ctx.draw(
        st.sampled_from(
            [
                "with torch.no_grad():\n    {e}.lerp_({p}, 0.1)",
                "with torch.no_grad():\n    {e}.mul_(0.9).add_({p}, alpha=0.1)",
                "torch._foreach_lerp_([{e}], [{p}.detach()], 0.1)",
                "{e}.copy_(0.9 * {e} + 0.1 * {p}.detach())",
            ]
        )
    )
    return how.format(e=ctx.x, p=source).split("\n"), False


def _accumulate(ctx: Context) -> tuple[list[str], bool]:
    # Gradient accumulation: micro-batch losses, each divided by their count,
    # backpropagated one after another into the same .grad before one step.
    micro = ctx.draw(st.sampled_from([2, 3]))
    return [
        f"for {ctx.new_name} in range({micro}):",
        f"    ({ctx.x} * ({ctx.new_name} + 1)).sum().div({micro}).backward()",
    ], False


def _clip_grad(ctx: Context) -> tuple[list[str], bool]:
    how = ctx.draw(
        st.sampled_from(
            [
                "torch.nn.utils.clip_grad_norm_([{x}], 0.5)",
                "torch.nn.utils.clip_grad_value_([{x}], 0.1)",
            ]
        )
    )
    return [how.format(x=ctx.x)], False


def _grad_assign(ctx: Context) -> tuple[list[str], bool]:
    how = ctx.draw(
        st.sampled_from(["torch.ones_like({x})", "None", "{x}.detach() * 2", "{x}.detach()"])
    )
    return [f"{ctx.x}.grad = {how.format(x=ctx.x)}"], False


def _inplace_more(ctx: Context) -> tuple[list[str], bool]:
    i = ctx.index()
    how = ctx.draw(
        st.sampled_from(
            [
                "{x}.index_fill_(0, torch.tensor([{i}, {i}]), 2.0)",
                "{x}.put_(torch.tensor([{i}, {i}]), torch.tensor([1.0, 2.0], dtype={x}.dtype),"
                " accumulate=True)",
                "{x}.masked_scatter_({x} > 0, torch.ones_like({x}) * 3)",
                "{x}.lerp_(torch.ones_like({x}), 0.5)",
                "{x}.addcmul_({x}, {x}, value=0.5)",
                "{x}.scatter_reduce_(0, torch.zeros_like({x}, dtype=torch.long), {x} * 2, 'amax')",
                # In place through torch.nn.functional, scans, and copies
                # across dtypes: other decompositions of a write.
                "torch.nn.functional.silu({x}, inplace=True)",
                "torch.nn.functional.hardtanh_({x})",
                "{x}.cumsum_(0)",
                "{x}.copy_({x}.to(torch.int64))",
                "{x}.clamp_(min=torch.zeros_like({x}))",
            ]
        )
    )
    return [how.format(x=ctx.x, i=i)], False


def _caught_error(ctx: Context) -> tuple[list[str], bool] | None:
    # Drawn one time in four it is picked: on torch 2.13 nearly every program
    # of it meets one known bug (dynamo-caught-error-escapes: 552 of 20724
    # programs of a 30-minute aot_eager campaign), time a campaign should
    # spend on others. Shrinks to drawn.
    if ctx.draw(st.integers(0, 3)):
        return None
    # An op eager rejects, caught by the program: compiled code must raise
    # where eager does, so that the handler runs on both sides. One error
    # stands for all, a view to 7 rows, so that a failure to raise it is one
    # signature whatever the tensor: the op that raises does not matter to
    # the mechanism. Drawn sizes are 1 to 3, so it raises as drawn; where a
    # size grows to fit (a dynamic schedule), both sides take the try body.
    return [
        "try:",
        f"    {ctx.new_name} = {ctx.x}.view(7, -1)",
        "except RuntimeError:",
        f"    {ctx.new_name} = {ctx.x} + 1",
    ], True


def _resamplable(var: Var) -> bool:
    tensor = var.tensor
    return _floating(var) and tensor is not None and tensor.dim() in (2, 3) and tensor.numel() > 0


def _interpolate(ctx: Context) -> tuple[list[str], bool]:
    # Resampling: its decomposition saves the input for backward where
    # eager's kernel keeps only sizes, so a later in-place write of the input
    # must not invalidate the compiled backward.
    mode = "linear" if ctx.t.dim() == 2 else "bilinear"
    return [
        f"{ctx.new_name} = torch.nn.functional.interpolate("
        f"{ctx.x}.unsqueeze(0), scale_factor=2, mode={mode!r})"
    ], True


def _unfold(ctx: Context) -> tuple[list[str], bool]:
    dim = ctx.dim()
    size = 2 if ctx.t.shape[dim] >= 2 else 1
    return [f"{ctx.new_name} = {ctx.x}.unfold({dim}, {size}, 1)"], True


# Python over tensors, which Dynamo interprets: builtins, comprehensions,
# starred shapes, slicing of tuples of tensors.
_python_constructs = _assign_one_of(
    "sum([{x}, {x} * 2])",
    "torch.stack([t * i for i, t in enumerate({x}.unbind(0))])",
    "{x}.reshape(*reversed({x}.shape))",
    "torch.cat({x}.unbind(0)[::-1])",
    "{x}.split([1, {x}.shape[0] - 1])[-1]",
)


def _position(ctx: Context) -> str:
    """Where a serving step writes or reads its cache: the step number a Python number
    input carries (``0.5 + k``, another each call: a recompile, or a symbolic int
    once Dynamo makes it dynamic), else the last or first row."""
    numbers = [v.name for v in ctx.variables if v.origin == "number"]
    if numbers and ctx.draw(st.booleans()):
        return f"int({ctx.draw(st.sampled_from(numbers))}) % {ctx.x}.shape[0]"
    row: str = ctx.draw(st.sampled_from(["-1", "0"]))
    return row


def _cache_append(ctx: Context) -> tuple[list[str], bool]:
    # A cache that grows by a row each step, as a KV cache grows by a token.
    row = ctx.draw(st.sampled_from(["{x}[-1:] * 0.5", "{x}[:1] + 1"]))
    return [f"{ctx.new_name} = torch.cat([{ctx.x}, {row.format(x=ctx.x)}])"], True


def _cache_write(ctx: Context) -> tuple[list[str], bool]:
    # A preallocated cache written in place at this step's position.
    position = _position(ctx)
    how = ctx.draw(
        st.sampled_from(
            [
                "{x}[{p}] = {x}[{p}] * 0.5 + 1",
                "{x}.index_copy_(0, torch.tensor([{p}]), {x}[:1] * 2)",
                "{x}[{p}].copy_({x}[0] + 1)",
            ]
        )
    )
    return [how.format(x=ctx.x, p=position)], False


def _cache_shift(ctx: Context) -> tuple[list[str], bool]:
    # A ring buffer moved on by one, then its newest slot written: rolled and
    # copied back, or its rows shifted over themselves from a clone (whose copy
    # overlaps its source once the buffer spans more than one vector load).
    shift = ctx.draw(
        st.sampled_from(["{x}.copy_(torch.roll({x}, 1, 0))", "{x}[1:] = {x}[:-1].clone()"])
    )
    return [shift.format(x=ctx.x), f"{ctx.x}[0] = 0.5"], False


def _cache_scatter(ctx: Context) -> tuple[list[str], bool]:
    # A functional cache update, as compiled serving code writes one: the row
    # scattered into a new tensor, which is then copied back into the cache (or
    # the cache is cleared for the next request, or kept as it was).
    position = _position(ctx)
    start = f"{ctx.x}.shape[0] - 1" if position == "-1" else position
    then = ctx.draw(st.sampled_from(["{x}.copy_({v})", "{x}.zero_()", ""]))
    lines = [
        f"{ctx.new_name} = torch.slice_scatter({ctx.x}, {ctx.x}[:1] * 2, 0, {start}, {start} + 1)"
    ]
    return lines + ([then.format(x=ctx.x, v=ctx.new_name)] if then else []), True


def _cache_prefix(ctx: Context) -> tuple[list[str], bool]:
    # The filled part of a cache: a slice whose length follows the input's.
    length = ctx.draw(st.sampled_from(["{x}.shape[0] // 2 + 1", "{x}.shape[0] - 1 or 1"]))
    return [f"{ctx.new_name} = {ctx.x}[: {length.format(x=ctx.x)}]"], True


def _aten(method: str, build: Builder) -> Builder:
    """``build``'s statement ``x.method(args)`` spelled as the ATen op it calls,
    ``torch.ops.aten.method(x, args)``: what a decomposition, a custom kernel or
    library code calls, which Dynamo traces where it graph-breaks on the method
    (``Tensor.resize_``) and which functionalization meets without the method's
    Python layer in between."""

    def build_aten(ctx: Context) -> tuple[list[str], bool] | None:
        built = build(ctx)
        if built is None:
            return None
        lines, binds = built
        return [_respelled(line, ctx.x, method) for line in lines], binds

    return build_aten


class _AtenCall(ast.NodeTransformer):
    """``x.method(args)`` as ``torch.ops.aten.method(x, args)``; a size the method takes
    as an int, the op takes as a list."""

    def __init__(self, target: str, method: str) -> None:
        self.target, self.method = target, method

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        func = node.func
        if not (
            isinstance(func, ast.Attribute)
            and func.attr == self.method
            and isinstance(func.value, ast.Name)
            and func.value.id == self.target
        ):
            return node
        args = list(node.args)
        if self.method == "resize_" and args and not isinstance(args[0], ast.List):
            args[0] = ast.List([args[0]], ast.Load())
        op = ast.parse(f"torch.ops.aten.{self.method}", mode="eval").body
        return ast.Call(op, [func.value, *args], node.keywords)


def _respelled(line: str, target: str, method: str) -> str:
    """One source line with its ``target.method(...)`` call spelled as the ATen op."""
    if not line.startswith(f"{target}.{method}("):
        return line
    tree = _AtenCall(target, method).visit(ast.parse(line))
    return ast.unparse(ast.fix_missing_locations(tree))


def _cond(ctx: Context) -> tuple[list[str], bool]:
    # A higher-order op: both branches are traced into subgraphs, one runs.
    branches = ctx.draw(
        st.sampled_from(
            [
                ("lambda t: t * 2", "lambda t: t + 1"),
                ("lambda t: t.sin()", "lambda t: t.clone()"),
            ]
        )
    )
    predicate = ctx.draw(st.sampled_from(["{x}.sum() > 0", "{x}.numel() > 2"]))
    return [
        f"{ctx.new_name} = torch.cond({predicate.format(x=ctx.x)}, "
        f"{branches[0]}, {branches[1]}, ({ctx.x},))"
    ], True


def _families(*names: str) -> frozenset[str]:
    return frozenset({*names, "mixed"})


#: Every family: the basic ops each draws.
ALL = _families(*(family for family in FAMILIES if family != "mixed"))
# Families that vary inputs across calls mutate too: the combination breaks
# compilers far more often than either hazard alone.
MUTATION = _families("mutation", "schedules")
VIEWS = _families("views", "mutation", "spellings")
TRANSFER = _families("transfer")
AUTOGRAD = _families("autograd")
#: What a training step does to its parameters: a backward, an optimizer's or a
#: hand-written update, clearing or clipping gradients. Not in ``mixed``, whose
#: draws the suite's seeds fix.
TRAINING = frozenset({"training"})
#: What a serving step does to its caches: grow one by a row, write one in place at
#: the step's position, shift a ring buffer, read the filled part. Not in ``mixed``.
SERVING = frozenset({"serving"})
#: The in-place and metadata ops spelled as the ATen ops they call
#: (``torch.ops.aten.resize_(x, [n])``), and ``torch.cond``, over the views family's
#: views. Not in ``mixed``.
SPELLINGS = frozenset({"spellings"})
RNG = _families("rng")
SCALARS = _families("scalars", "mutation")
GRAPHS = _families("mutation", "views", "autograd", "schedules", "rng", "training")
INDEXING = _families("mutation", "views", "schedules")
FACTORIES = _families("views", "autograd", "scalars", "schedules")

# Simplest first: sampled_from shrinks towards the front of the list.
OPS: tuple[OpSpec, ...] = (
    OpSpec("add", "outplace", ALL, _tensor, _binary("+")),
    OpSpec("mul", "outplace", ALL, _tensor, _binary("*")),
    OpSpec("clone", "outplace", ALL, _tensor, _assign("{x}.clone()")),
    OpSpec("sin", "outplace", ALL, _floating, _assign("torch.sin({x})")),
    OpSpec("relu", "outplace", ALL, _floating, _assign("torch.relu({x})")),
    OpSpec("sum", "outplace", ALL, _rank_at_least(1), _sum_dim),
    OpSpec("matmul", "outplace", ALL, _floating_rank(2), _matmul),
    OpSpec("zeros_like", "factory", ALL, _tensor, _factory),
    OpSpec("add_", "inplace", MUTATION | SCALARS | AUTOGRAD, _writable(_tensor), _inplace("add_")),
    OpSpec("mul_", "inplace", MUTATION | SCALARS | AUTOGRAD, _writable(_tensor), _inplace("mul_")),
    OpSpec("div_", "inplace", MUTATION, _writable(_floating), _inplace("div_")),
    OpSpec("clamp_", "inplace", MUTATION, _writable(_floating), _clamp),
    OpSpec("copy_", "inplace", MUTATION, _writable(_tensor), _copy),
    OpSpec("fill_", "inplace", MUTATION | SCALARS, _not_grad_leaf, _fill),
    OpSpec("zero_", "inplace", MUTATION, _writable(_tensor), _statement("{x}.zero_()")),
    OpSpec("masked_fill_", "inplace", MUTATION, _writable(_floating), _masked_fill),
    OpSpec("index_put_", "inplace", MUTATION, _writable(_floating_rank(1)), _index_put),
    OpSpec("index_add_", "inplace", MUTATION, _writable(_floating_rank(1)), _index_add),
    OpSpec("scatter_", "inplace", MUTATION, _writable(_floating_rank(1)), _scatter),
    OpSpec("out=", "inplace", MUTATION, _writable(_floating), _out_variant),
    OpSpec("setitem", "inplace", MUTATION, _writable(_floating_rank(1)), _setitem),
    OpSpec(
        "no_grad_update",
        "inplace",
        MUTATION | AUTOGRAD | TRAINING,
        _leaf_with_grad,
        _no_grad_update,
    ),
    OpSpec("resize_", "metadata", MUTATION, _writable(_tensor), _resize),
    OpSpec("t_", "metadata", MUTATION, _writable(_matrix_or_less), _statement("{x}.t_()")),
    OpSpec("transpose_", "metadata", MUTATION, _writable(_rank_at_least(1)), _transpose_),
    OpSpec("unsqueeze_", "metadata", MUTATION, _writable(_tensor), _unsqueeze_),
    OpSpec("squeeze_", "metadata", MUTATION, _writable(_rank_at_least(1)), _squeeze_),
    OpSpec("as_strided_", "metadata", MUTATION, _writable(_tensor), _as_strided_),
    OpSpec("set_", "metadata", MUTATION, _writable(_tensor), _set_),
    OpSpec("detach_", "metadata", MUTATION | AUTOGRAD, _tensor, _statement("{x}.detach_()")),
    OpSpec("view", "view", VIEWS, _tensor, _view_flat),
    OpSpec("slice", "view", VIEWS, _rank_at_least(1), _slice_step),
    OpSpec("select", "view", VIEWS, _rank_at_least(1), _select),
    OpSpec("narrow", "view", VIEWS, _rank_at_least(1), _narrow),
    OpSpec("transpose", "view", VIEWS, _rank_at_least(1), _transpose),
    OpSpec("unsqueeze", "view", VIEWS, _tensor, _unsqueeze),
    OpSpec("squeeze", "view", VIEWS, _rank_at_least(1), _squeeze),
    OpSpec("expand", "view", VIEWS, _tensor, _expand),
    OpSpec("diagonal", "view", VIEWS, _rank_at_least(2), _assign("{x}.diagonal()")),
    OpSpec("unbind", "view", VIEWS, _rank_at_least(1), _split),
    OpSpec("as_strided", "view", VIEWS, _tensor, _as_strided),
    OpSpec("to", "transfer", TRANSFER, _tensor, _to_device),
    OpSpec("to_dtype", "transfer", TRANSFER, _floating, _to_dtype),
    OpSpec("backward", "autograd", AUTOGRAD | TRAINING, _needs_grad, _backward),
    OpSpec("autograd.grad", "autograd", AUTOGRAD, _needs_grad, _autograd_grad),
    OpSpec("detach", "autograd", AUTOGRAD, _tensor, _detach),
    OpSpec("no_grad", "autograd", AUTOGRAD, _floating, _no_grad_block),
    # Hooks go on intermediates only (the builder steps off a leaf first):
    # eager torch 2.13 segfaults registering one on a view of a leaf whose
    # base was written in place (pytorch/pytorch#196459).
    OpSpec("register_hook", "autograd", AUTOGRAD, _needs_grad, _hook),
    OpSpec("read_grad", "autograd", AUTOGRAD | TRAINING, _leaf_with_grad, _read_grad),
    OpSpec("zero_grad", "autograd", AUTOGRAD | TRAINING, _leaf_with_grad, _zero_grad),
    # Eager warns that an intermediate's .grad is not populated, and reads
    # None: the read is what is tested, so that warning is tolerated.
    OpSpec(
        "branch_on_grad",
        "autograd",
        AUTOGRAD,
        _needs_grad,
        _branch_on_grad,
        tolerated_warning=NON_LEAF_GRAD_WARNING,
    ),
    OpSpec("rand_like", "rng", RNG, _floating, _assign("{x} + torch.rand_like({x})")),
    OpSpec("randn_like", "rng", RNG, _floating, _assign("{x} * torch.randn_like({x})")),
    OpSpec("dropout", "rng", RNG, _floating, _dropout),
    OpSpec("bernoulli", "rng", RNG, _floating, _bernoulli),
    # Draws of a Python random.Random argument, added to a tensor.
    OpSpec("python_random", "rng", RNG, _tensor, _python_random),
    OpSpec("where_scalar", "outplace", SCALARS, _floating, _where_scalar),
    # Several graphs per program: the values live at the break are outputs of
    # one graph and inputs of the next, which CUDA-graph trees chain.
    OpSpec("graph_break", "graph", GRAPHS, _tensor, _statement("torch._dynamo.graph_break()")),
    # Integer, int64-tensor (duplicate indices) and boolean-mask reads.
    OpSpec("index_read", "view", INDEXING, _rank_at_least(1), _index_read),
    # Advanced-index and mask writes, duplicates writing one value.
    OpSpec("index_write", "inplace", INDEXING, _writable(_floating_rank(1)), _index_write),
    # Fresh tensors of a new shape (zero-size, rank 4, requiring grad).
    OpSpec("factory", "factory", FACTORIES, _tensor, _fresh_factory),
    # Out-of-place index ops on any tensor, stride-0 ones included.
    OpSpec("index_outplace", "outplace", INDEXING, _floating_rank(1), _index_outplace),
    # out= resized from empty, or aliasing its own input.
    OpSpec("out_more", "inplace", MUTATION, _writable(_floating_rank(1)), _out_more),
    # Copies or views depending on layout: flip, reshape, movedim, view(dtype).
    OpSpec("reshape", "view", VIEWS, _rank_at_least(1), _reshape_op),
    # Several tensors into one, or index-driven reads.
    OpSpec("combine", "outplace", VIEWS, _rank_at_least(1), _combine),
    # Reductions with keepdim; argmax/argmin produce int64.
    OpSpec("reduce", "outplace", VIEWS | AUTOGRAD, _floating_rank(1), _reduce),
    # Ops that may hand back their input itself.
    OpSpec("maybe_same", "outplace", VIEWS | AUTOGRAD, _floating, _maybe_same),
    # Python metadata (size, rank, requires_grad) feeding later statements.
    OpSpec("metadata_read", "metadata_read", SCALARS | VIEWS, _tensor, _metadata_read),
    # enable_grad nested in no_grad.
    OpSpec("enable_grad", "autograd", AUTOGRAD, _floating, _grad_mode),
    # Zero-size views.
    OpSpec("zero_size", "view", VIEWS, _rank_at_least(1), _zero_size),
    # torch.autograd.Function: saved tensors, mark_dirty, non-differentiable
    # outputs, once_differentiable.
    OpSpec("autograd_function", "autograd", AUTOGRAD | MUTATION, _floating, _autograd_function),
    # .data assignment: the tensor keeps its identity, its data changes.
    OpSpec("data_assign", "metadata", MUTATION, _writable(_rank_at_least(1)), _data_assign),
    # A leaf starts requiring grad inside the program.
    OpSpec(
        "requires_grad_",
        "autograd",
        AUTOGRAD,
        _leaf_without_grad,
        _statement("{x}.requires_grad_()"),
    ),
    # A module argument called: its buffer written in forward, its parameter used.
    OpSpec("module_call", "outplace", AUTOGRAD | MUTATION | TRAINING, _floating, _module_call),
    # torch.library custom ops: one mutating its argument, one with a fake kernel.
    OpSpec("custom_op", "inplace", MUTATION | VIEWS, _floating, _custom_op),
    # Real views of complex memory and back (.real, .imag, view_as_real/complex):
    # views across dtypes, which functionalization replays by their own rules.
    OpSpec("complex_view", "view", VIEWS | MUTATION, _complex_viewable, _complex_view),
    # One foreach op over a list: in place over tensors of separate memory,
    # out of place over entries that may alias.
    OpSpec("foreach", "inplace", MUTATION | VIEWS, _writable(_floating), _foreach),
    # Activation checkpointing: backward recomputes a body (random, in place).
    OpSpec("checkpoint", "autograd", AUTOGRAD | RNG | TRAINING, _floating, _checkpoint),
    # Autocast to bfloat16 around a product, with writes inside the region.
    OpSpec(
        "autocast",
        "transfer",
        TRANSFER | AUTOGRAD | MUTATION | TRAINING,
        _floating_rank(1),
        _autocast,
    ),
    # A non-leaf keeps its grad (retain_grad), read after a backward.
    OpSpec("retain_grad", "autograd", AUTOGRAD, _nonleaf_with_grad, _retain_grad),
    # Copies that keep or change the layout (channels_last, preserve_format).
    OpSpec("memory_format", "view", VIEWS | MUTATION, _tensor, _memory_format),
    # Results whose size depends on values: nonzero, masked_select, tolist.
    OpSpec("data_dependent", "outplace", VIEWS | SCALARS, _rank_at_least(1), _data_dependent),
    # A hook that writes the grad or the leaf itself once its grad is accumulated.
    OpSpec(
        "post_accumulate_hook",
        "autograd",
        AUTOGRAD | TRAINING,
        _leaf_with_grad,
        _post_accumulate_hook,
    ),
    # torch.func transforms: vmap (in place too) and grad.
    OpSpec("functorch", "outplace", VIEWS | AUTOGRAD | MUTATION, _floating_rank(1), _functorch),
    # Inference tensors made inside the program, used after the block.
    OpSpec("inference_mode", "autograd", AUTOGRAD | MUTATION, _floating, _inference_block),
    # Grad modes switched by calls or nested blocks inside the ambient mode.
    OpSpec("grad_mode_switch", "autograd", AUTOGRAD | MUTATION, _floating, _grad_mode_switch),
    # .grad assigned to a leaf (requiring grad or not): a fresh tensor, None,
    # or the leaf's own memory.
    OpSpec("grad_assign", "autograd", AUTOGRAD | TRAINING, _floating_leaf, _grad_assign),
    # More in-place index and blend ops (duplicate indices accumulate).
    OpSpec("inplace_more", "inplace", MUTATION, _writable(_floating_rank(1)), _inplace_more),
    # Overlapping windows: a view whose elements share memory.
    OpSpec("unfold", "view", VIEWS, _rank_at_least(1), _unfold),
    # Python builtins and comprehensions over tensors.
    OpSpec("python", "outplace", SCALARS | VIEWS, _rank_at_least(1), _python_constructs),
    # Reads and writes of a plain Python object argument's state.
    OpSpec("python_state", "python", _families("schedules"), _tensor, _python_state),
    # An op that raises, caught by try/except in the program (scalars and
    # mixed only: on torch 2.13 every program of it meets one known bug).
    OpSpec("caught_error", "outplace", _families("scalars"), _tensor, _caught_error),
    # Added last, so that the draws (and shrinks) of the ops before them
    # stay as they were: a custom op rebinding its argument with set_, and
    # resampling whose decomposition saves its input.
    OpSpec("custom_set_", "metadata", MUTATION, _writable(_floating), _custom_set),
    OpSpec("interpolate", "outplace", AUTOGRAD | MUTATION, _resamplable, _interpolate),
    # A range written at once from a number, another tensor or the target's
    # own shifted rows; and the out-of-place scatters of a view.
    OpSpec("slice_assign", "inplace", INDEXING, _writable(_rank_at_least(1)), _slice_assign),
    OpSpec("slice_scatter", "outplace", INDEXING, _rank_at_least(1), _scatter_outplace),
    # A module global rebound by the program and read back, directly, through
    # a helper and inside a nested_compile_region.
    OpSpec(
        "module_state",
        "python",
        _families("schedules"),
        _tensor,
        _steps_one_of(_MODULE_STATE_STEPS),
    ),
    # A class built inside the call, its class-level state and methods used.
    # schedules only: its programs compile under a setting of their own, and,
    # like the memory budget, a compile setting is not drawn in mixed (it kept
    # mixed programs from shrinking to one input).
    OpSpec(
        "local_class",
        "python",
        frozenset({"schedules"}),
        _tensor,
        _steps_one_of(_LOCAL_CLASS_STEPS),
    ),
    # A training step's updates (training only): a hand-written one, torch.optim's
    # step and zero_grad, gradient clipping.
    OpSpec("parameter_update", "inplace", TRAINING, _leaf_holding_grad, _parameter_update),
    OpSpec("optimizer_step", "inplace", TRAINING, _leaf_holding_grad, _optimizer_step),
    OpSpec("clip_grad", "inplace", TRAINING, _leaf_holding_grad, _clip_grad),
    OpSpec("scheduled_step", "inplace", TRAINING, _leaf_holding_grad, _scheduled_step),
    OpSpec("scaled_step", "inplace", TRAINING, _leaf_with_grad, _scaled_step),
    OpSpec("ema_update", "inplace", TRAINING, _writable(_floating), _ema_update),
    OpSpec("accumulate", "autograd", TRAINING, _leaf_with_grad, _accumulate),
    # A serving step's caches (serving only).
    OpSpec("cache_append", "outplace", SERVING, _floating_rank(1), _cache_append),
    OpSpec("cache_write", "inplace", SERVING, _writable(_floating_rank(1)), _cache_write),
    OpSpec("cache_shift", "inplace", SERVING, _writable(_floating_rank(1)), _cache_shift),
    OpSpec("cache_prefix", "view", SERVING, _rank_at_least(1), _cache_prefix),
    OpSpec("cache_scatter", "outplace", SERVING, _writable(_floating_rank(1)), _cache_scatter),
    # The same writes as ATen ops (spellings only).
    OpSpec(
        "aten.add_", "inplace", SPELLINGS, _writable(_floating), _aten("add_", _inplace("add_"))
    ),
    OpSpec(
        "aten.mul_", "inplace", SPELLINGS, _writable(_floating), _aten("mul_", _inplace("mul_"))
    ),
    OpSpec(
        "aten.index_put_",
        "inplace",
        SPELLINGS,
        _writable(_floating_rank(1)),
        _aten("index_put_", _index_put),
    ),
    OpSpec("aten.resize_", "metadata", SPELLINGS, _writable(_tensor), _aten("resize_", _resize)),
    OpSpec(
        "aten.t_",
        "metadata",
        SPELLINGS,
        _writable(_matrix_or_less),
        _aten("t_", _statement("{x}.t_()")),
    ),
    OpSpec(
        "aten.transpose_",
        "metadata",
        SPELLINGS,
        _writable(_rank_at_least(1)),
        _aten("transpose_", _transpose_),
    ),
    OpSpec(
        "aten.unsqueeze_",
        "metadata",
        SPELLINGS,
        _writable(_tensor),
        _aten("unsqueeze_", _unsqueeze_),
    ),
    OpSpec(
        "aten.as_strided_",
        "metadata",
        SPELLINGS,
        _writable(_tensor),
        _aten("as_strided_", _as_strided_),
    ),
    OpSpec("cond", "outplace", SPELLINGS, _floating, _cond),
)


#: The ``to`` record of a CUDA run: same name, place and families as the
#: catalog's, so coverage and shrinking treat it as the same op.
_TO_CUDA = OpSpec("to", "transfer", TRANSFER, _tensor, _to_device_cuda)


def is_cuda_device(device: str) -> bool:
    """Whether ``device`` (``cpu``, ``cuda``, ``cuda:N``) names a GPU."""
    return device == "cuda" or device.startswith("cuda:")


#: The hazard class each kind of op belongs to: ``mixed`` draws a class
#: first, then an op of it, so that a class of few ops (four that move
#: tensors, four random ones) is met as often as one of many (nineteen
#: in-place writes), and a fault confined to one class is met in a short
#: campaign.
HAZARD_CLASSES = {
    "inplace": "writes",
    "metadata": "writes",
    "view": "views",
    "transfer": "transfers",
    "autograd": "autograd",
    "rng": "random",
    "outplace": "compute",
    "factory": "compute",
    "metadata_read": "compute",
    "graph": "compute",
    # A Holder's reads and writes: its argument is drawn rarely, and each is
    # used at once by an opening step (generate._holder_steps), so they
    # need no class of their own to be met.
    "python": "compute",
}


def hazard_strata(own: tuple[OpSpec, ...]) -> tuple[tuple[OpSpec, ...], ...]:
    """``own`` grouped by hazard class (:data:`HAZARD_CLASSES`), in a fixed order."""
    classes = sorted({HAZARD_CLASSES[op.kind] for op in own})
    return tuple(tuple(op for op in own if HAZARD_CLASSES[op.kind] == c) for c in classes)


def ops_for(family: str, device: str = "cpu") -> tuple[tuple[OpSpec, ...], tuple[OpSpec, ...]]:
    """The records a family draws from: (shared basic ops, the family's own ops).

    Kept apart so that a family's own ops are not drowned by the basic ones
    every family shares. On a CUDA ``device`` the ``to`` record draws real
    host-device transfers too; on the CPU the catalog is used as it is.
    """
    chosen = [op for op in OPS if family in op.families]
    if is_cuda_device(device):
        chosen = [_TO_CUDA if op.name == "to" else op for op in chosen]
    return (
        tuple(op for op in chosen if op.families == ALL),
        tuple(op for op in chosen if op.families != ALL),
    )
