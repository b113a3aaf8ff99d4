"""The hazard a program's call belongs to: what a repro's calls say about its bug.

A repro file a run writes carries its minimal program, but not which of its
calls make the bug: ``clone``, ``sin`` or ``zeros_like`` are there because
the generator drew them, while the random draw, the in-place write or the
view is what the compiled path gets wrong. Requiring every call of that
program made the same bug, met through other ops (``randn_like`` instead of
``rand_like``, ``mul_`` instead of ``add_``), count as new in every later run.

So an entry that is neither a form of a bug (whose ``essential`` calls say
what matters) nor declares its own ``ops`` claims a failing program by
hazard: the program must make a call of each hazard class the entry's
program makes among those that change state the compiled path must
reproduce (a random draw, an in-place write, an in-place metadata change,
a device or dtype transfer, a graph break). Views and autograd calls are
classed too, but only shape what a difference is seen through (a value
read through ``as_strided``, an output of ``detach``): a minimal program
keeps whichever one its draw happened to use, and the signature already
names a difference in aliasing or gradients. Calls of no hazard (plain
arithmetic, reductions, factories) are incidental beside a hazard; a
program that makes no hazard call at all is its computation, and every call
of it is required (one wrong ``sin`` under Inductor does not hide a later
wrong ``matmul``).

The classes follow the kinds of the generator's op table (``rng``,
``inplace``, ``metadata``, ``view``, ``transfer``, ``autograd``, ``graph``),
and a class of its own for a compile setting the program sets (``config``),
read from call names as :func:`pytest_cgraph.registry.entries.program_ops` gives
them. Torch-free: the registry reads it while collecting.
"""

from __future__ import annotations

from collections.abc import Iterable

RNG = frozenset(
    {
        "rand",
        "randn",
        "rand_like",
        "randn_like",
        "randint",
        "randint_like",
        "randperm",
        "bernoulli",
        "bernoulli_",
        "dropout",
        "dropout_",
        "dropout1d",
        "dropout2d",
        "dropout3d",
        "feature_dropout",
        "alpha_dropout",
        "feature_alpha_dropout",
        "native_dropout",
        "multinomial",
        "normal",
        "normal_",
        "uniform_",
        "exponential_",
        "geometric_",
        "cauchy_",
        "log_normal_",
        "random_",
        "poisson",
        "rrelu",
        "manual_seed",
        "Dropout",
        # A Python random.Random argument (the pseudo-op program_ops gives it).
        "random.Random",
    }
)
#: In-place changes of a tensor's metadata (shape, strides, storage, autograd identity).
METADATA = frozenset(
    {
        "resize_",
        "resize_as_",
        "t_",
        "transpose_",
        "swapdims_",
        "swapaxes_",
        "unsqueeze_",
        "squeeze_",
        "as_strided_",
        "set_",
        "detach_",
        ".data=",
    }
)
AUTOGRAD = frozenset(
    {
        "backward",
        "grad",
        "autograd.grad",
        "register_hook",
        "register_post_accumulate_grad_hook",
        "register_forward_hook",
        "register_forward_pre_hook",
        "register_full_backward_hook",
        "register_full_backward_pre_hook",
        "retain_grad",
        "requires_grad_",
        "no_grad",
        "enable_grad",
        "inference_mode",
        "set_grad_enabled",
        "checkpoint",
        "detach",
        "zero_grad",
        ".grad",  # a read of a tensor's .grad (program_ops' pseudo-op)
        ".grad=",  # an assignment to it
        "apply",
        "jvp",
        "vjp",
        "vmap",
    }
)
TRANSFER = frozenset(
    {
        "to",
        "cpu",
        "cuda",
        "pin_memory",
        "double",
        "float",
        "half",
        "bfloat16",
        "type",
        "type_as",
        "autocast",
        "AUTOCAST",  # the program runs under an autocast (program_ops' pseudo-op)
        "contiguous",
    }
)
VIEW = frozenset(
    {
        "view",
        "view_as",
        "reshape",
        "reshape_as",
        "transpose",
        "swapdims",
        "t",
        "T",
        "mT",
        "permute",
        "movedim",
        "expand",
        "expand_as",
        "narrow",
        "select",
        "unsqueeze",
        "squeeze",
        "diagonal",
        "unbind",
        "split",
        "chunk",
        "as_strided",
        "unfold",
        "flatten",
        "view_as_real",
        "view_as_complex",
        "real",
        "imag",
        "[:]",
        "[i]",
    }
)
GRAPH = frozenset({"graph_break"})
#: program_ops' pseudo-ops for an augmented assignment to a name (``a0 -= v``:
#: ``isub``, as Python's ``operator`` module names it): an in-place op (``sub_``)
#: whose result the name is bound to again.
AUGMENTED = frozenset(
    f"i{name}"
    for name in (
        "add",
        "sub",
        "mul",
        "truediv",
        "floordiv",
        "mod",
        "pow",
        "matmul",
        "and",
        "or",
        "xor",
        "lshift",
        "rshift",
    )
)
#: program_ops' names of a binary operator (``a0 * 2``: ``mul``), the torch functions
#: they call. In a program of no hazard they are how its values are made, not what
#: goes wrong: a wrong ``sin`` met as ``sin(a0) * 2`` is the one met as ``sin(a0) + 1``.
ARITHMETIC = frozenset(
    {
        "add",
        "sub",
        "mul",
        "div",
        "floor_divide",
        "remainder",
        "pow",
        "matmul",
        "bitwise_and",
        "bitwise_or",
        "bitwise_xor",
        "bitwise_left_shift",
        "bitwise_right_shift",
    }
)
#: program_ops' pseudo-op for a compile setting a program sets (``COMPILE_CONFIG``):
#: ``CONFIG.activation_memory_budget``. It changes how every graph is compiled.
CONFIG_PREFIX = "CONFIG."

#: Checked in this order: ``requires_grad_`` is autograd state before it is an
#: in-place call, ``squeeze_`` a metadata change, ``bernoulli_`` a random draw.
_CLASSES = (
    ("rng", RNG),
    ("autograd", AUTOGRAD),
    ("metadata", METADATA),
    ("transfer", TRANSFER),
    ("view", VIEW),
    ("graph", GRAPH),
)


def hazard_of(call: str) -> str | None:
    """The hazard class of one call (``None``: incidental). A module call is named
    by its class (``Dropout()``): a random module draws."""
    call = call.removesuffix("()")
    if call.startswith(CONFIG_PREFIX):
        return "config"
    for name, calls in _CLASSES:
        if call in calls:
            return name
    if call == "[]=" or call in AUGMENTED or (call.endswith("_") and not call.endswith("__")):
        return "inplace"  # add_, _foreach_mul_, copy_, index_put_, a[i] = v, a -= v (isub)
    return None


#: Classes that only shape how a difference is seen: never required of a program.
CONTEXT = frozenset({"view", "autograd"})


def hazards(calls: Iterable[str]) -> frozenset[str]:
    """The hazard classes ``calls`` touch."""
    return frozenset(h for h in map(hazard_of, calls) if h is not None)


def required_hazards(calls: Iterable[str]) -> frozenset[str]:
    """The hazard classes of ``calls`` a program must also touch to be the same bug:
    :func:`hazards` less :data:`CONTEXT`."""
    return hazards(calls) - CONTEXT


#: Writes through an index (where each value lands is the mechanism: a repeated
#: index, a scatter fused with a read), not interchangeable with a write of a whole
#: tensor.
INDEX_WRITES = frozenset(
    {
        "[]=",
        "index_put_",
        "index_put",
        "index_add_",
        "index_copy_",
        "index_fill_",
        "index_reduce_",
        "scatter_",
        "scatter_add_",
        "scatter_reduce_",
        "masked_fill_",
        "masked_scatter_",
        "put_",
    }
)
#: The custom ops of the program templates: each a kernel of its own, whose
#: registration (``mutates_args``, a fake kernel) is what a compiled graph gets wrong.
CUSTOM_OPS = frozenset({"add_one_", "scaled", "set_to_"})
#: Autograd calls any program that checks gradients makes: they say how a difference
#: is seen, not which bug it is.
INCIDENTAL_AUTOGRAD = frozenset({"backward", ".grad", "detach", "zero_grad"})
#: Where a program is cut into graphs (a graph break; two compiled functions,
#: program_ops' ``COMPILE``): how its calls are seen by the compiler, like a view,
#: not which bug they meet. A shrunk program keeps a cut its draw made early more
#: often than one its failure needs.
GRAPH_CUTS = frozenset({"graph_break", "COMPILE"})
#: Classes whose calls stand in for one another: a random draw is a random draw, a
#: transfer a transfer, an elementwise write a write.
INTERCHANGEABLE = frozenset({"rng", "transfer", "inplace"})


def mechanism_token(call: str) -> str | None:
    """What ``call`` says about which bug a minimal program meets, for telling bugs
    apart (:meth:`pytest_cgraph.registry.entries.Registry.match`).

    ``None`` for a call any program may make on the way (arithmetic, views, a
    backward, a read of ``.grad``, a cut between graphs); its class for a call
    interchangeable with the others of it (a random draw, a transfer, an
    elementwise in-place write); the call itself where its own meaning is the
    mechanism (a metadata change, an index write, a custom op, a hook, a grad
    mode, a transform, a module holding state, a setting, how inputs are
    handed over)."""
    if call in GRAPH_CUTS or call.startswith("aten."):
        # A cut between graphs; or an op's ATen spelling, beside the op's own
        # name (program_ops gives both): the op carries the meaning.
        return None
    if call in CUSTOM_OPS or call.startswith(CONFIG_PREFIX):
        return call
    if call.lower() == "autocast":  # the call and the pseudo-op of a program run under one
        return "autocast"
    if call.endswith("()") or (call.isupper() and call.replace("_", "").isalpha()):
        return call  # a module of the templates (Counter()), or a pseudo-op (ALIASED_INPUTS)
    if call in INDEX_WRITES:
        return "index-write"
    if call in INCIDENTAL_AUTOGRAD:
        return None
    hazard = hazard_of(call)
    if hazard is None or hazard == "view":
        return None
    if hazard in INTERCHANGEABLE and not call.startswith("_foreach"):
        return hazard
    return call


def mechanism_tokens(calls: Iterable[str]) -> frozenset[str]:
    """:func:`mechanism_token` of each of ``calls`` that has one."""
    return frozenset(token for token in map(mechanism_token, calls) if token is not None)
