"""Hypothesis strategies that draw :class:`~pytest_cgraph.strategies.program.Program` values.

Generation stays valid by construction: the inputs are built by executing
the rendered ``inputs(1)``, and each drawn statement is executed on those
concrete tensors at once. If torch raises or warns, the statement is
dropped and drawing goes on; torch itself is the shape and dtype checker.
Shrinking replays the same draws, so a shrunk program is valid too.
"""

from __future__ import annotations

import contextlib
import math
import random
import warnings
from collections.abc import Iterator
from typing import Any

import torch
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from pytest_cgraph.oracle.compiling import ambient, device_type_of
from pytest_cgraph.oracle.protocol import has_compile_setting
from pytest_cgraph.strategies.ops import (
    FAMILIES,
    Context,
    OpSpec,
    Var,
    hazard_strata,
    is_cuda_device,
    ops_for,
)
from pytest_cgraph.strategies.program import (
    FRESH_SCHEDULES,
    LAYOUTS,
    MODULE_HOOKS,
    OPTIMIZERS,
    ROLES,
    SCHEDULES,
    InputSpec,
    Program,
    Statement,
)
from pytest_cgraph.strategies.templates import templates_used

_DTYPES = ("float32", "float64", "int64", "bool", "float16", "bfloat16", "complex64")
_DIFFERENTIABLE = ("float32", "float64", "float16", "bfloat16")
_PREFIX = {
    "argument": "a",
    "parameter": "p",
    "buffer": "b",
    "scalar": "s",
    "number": "n",
    "module": "m",
    "random": "r",
    "holder": "h",
}
#: Roles each family draws its extra inputs from. A ``random.Random`` is
#: drawn only where its draws are (the random ops of ``rng`` and ``mixed``),
#: a ``Holder`` where its reads and writes are (``schedules`` and ``mixed``).
_ROLES_BY_FAMILY = {
    "scalars": ("argument", "scalar", "number", "parameter"),
    "autograd": ("argument", "parameter", "buffer", "module"),
    "training": ("argument", "parameter", "buffer", "module"),
    "serving": ("argument", "buffer", "number", "scalar"),
    "schedules": ("argument", "parameter", "scalar", "buffer", "module", "holder"),
    "rng": ("argument", "parameter", "random", "scalar", "number", "buffer", "module"),
    **{
        family: tuple(role for role in ROLES if role not in ("random", "holder"))
        for family in ("mutation", "views", "transfer", "spellings")
    },
}


# Strategies drawn from on every program, built once: building one per draw
# costs Hypothesis a cache lookup, or a new instance to validate.
_COIN = st.booleans()
_ONE_IN_FOUR = st.integers(0, 3)
_ONE_IN_SIX = st.integers(0, 5)


def _load_what_torch_loads_on_first_use() -> None:
    """Import now what torch imports the first time a drawn op runs.

    A statement that warns is rejected, and some ops warn only the first
    time a process runs them, while torch imports what they need (forward
    mode AD loads its decompositions through ``torch.jit.script``, which is
    deprecated). Rejected once and kept after, the same choices would draw
    another program, depending on what the process ran before.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.autograd.forward_ad._maybe_load_decompositions()


_load_what_torch_loads_on_first_use()
_ONE_IN_EIGHT = st.integers(0, 7)
_WIDE = st.integers(0, 1023)
_SHAPES = st.lists(st.integers(1, 3), min_size=1, max_size=3)
_DTYPE = st.sampled_from(_DTYPES)
#: What runs around every call when a program draws an ambient context: a
#: bfloat16 autocast (mixed precision; first, where the caller's own grad mode
#: stood before it, so that other programs draw as they did), no_grad or
#: inference_mode.
_AMBIENT = st.sampled_from(("autocast", "no_grad", "inference_mode"))
#: The partitioner's activation memory budget a program compiles under, when it
#: draws one (below 1: the min-cut partitioner recomputes forward values in the
#: backward instead of saving them, as training scripts ask to save memory).
_MEMORY_BUDGET = st.sampled_from((0.0, 0.5))
_MEMORY_BUDGET_SETTING = "torch._functorch.config.activation_memory_budget"
#: The setting under which Dynamo traces a class statement instead of breaking
#: the graph there: a program with a ``local_class`` statement compiles with it,
#: or that statement would test nothing but a graph break.
TRACE_BUILD_CLASS = "torch._dynamo.config.enable_trace_load_build_class"
_OPTIMIZER = st.sampled_from(OPTIMIZERS)
_MODULE_HOOK = st.sampled_from(MODULE_HOOKS)
_LAYOUT = st.sampled_from(LAYOUTS)
#: The schedules family's schedules: all but ``marked_dynamic``, the serving
#: family's own (added to it without changing what the others draw).
_SCHEDULE = st.sampled_from(tuple(s for s in SCHEDULES if s != "marked_dynamic"))
_TRAINING_SCHEDULE = st.sampled_from(("persistent", "optimizer", "param_update"))
#: A server's calls: shapes that change from call to call (a batch, a sequence
#: length), outputs fed back as the next call's inputs (a cache handed on), host
#: numbers that change (the step), or the same inputs kept (a preallocated cache).
_SERVING_SCHEDULE = st.sampled_from(
    ("dynamic", "feedback", "fresh", "persistent", "marked_dynamic")
)


def programs(
    *,
    families: tuple[str, ...] | list[str] = ("mixed",),
    min_statements: int = 1,
    max_statements: int = 6,
    max_inputs: int = 3,
    iters: int = 5,
    device: str = "cpu",
) -> st.SearchStrategy[Program]:
    """Small tensor programs from the named families.

    Args:
        families: any of ``mutation``, ``views``, ``transfer``, ``autograd``,
            ``rng``, ``scalars``, ``schedules``, ``training`` (a training step's
            backward and parameter updates), ``serving`` (caches grown, written
            and read at the step's position, over calls whose shapes or inputs
            change), ``spellings`` (in-place and metadata ops as ATen ops, and
            ``torch.cond``) and ``mixed`` (all together, less the training,
            serving and spellings families' own ops).
        min_statements, max_statements: bounds on the statements kept.
        max_inputs: bounds the program's arguments (at least one tensor).
        iters: iterations the program is run for (4+ replay CUDA graphs twice).
        device: the device the programs will run on (``cpu``, ``cuda``,
            ``cuda:N``). On a CUDA device the ``transfer`` family (and
            ``mixed``) also moves tensors between host and GPU: ``cuda()``,
            ``non_blocking`` copies, pinned memory, 0-dim host tensors meeting
            device tensors. On ``cpu`` the programs are those drawn without it.

    Examples from this strategy shrink by dropping statements (each is one
    deletable draw), dropping inputs, moving towards the simplest ops of the
    catalog, the ``persistent`` schedule, float32, contiguous layouts and
    tensor sides of 1.
    """
    families = tuple(families)
    unknown = sorted(set(families) - set(FAMILIES))
    if unknown or not families:
        raise InvalidArgument(
            f"unknown families {unknown or families!r}; choose from {', '.join(FAMILIES)}"
        )
    if not 0 <= min_statements <= max_statements:
        raise InvalidArgument(
            f"need 0 <= min_statements <= max_statements, got {min_statements}, {max_statements}"
        )
    if max_inputs < 1 or iters < 1:
        raise InvalidArgument(f"max_inputs and iters must be >= 1, got {max_inputs}, {iters}")
    if device != "cpu" and not is_cuda_device(device):
        raise InvalidArgument(f"device must be cpu, cuda or cuda:N, got {device!r}")
    return _programs(families, min_statements, max_statements, max_inputs, iters, device)


def draw_programs(
    count: int, *, families: tuple[str, ...], seed: int, device: str = "cpu"
) -> list[Program]:
    """Draw about ``count`` programs outside a test, reproducibly (scripts, benchmarks).

    Runs Hypothesis's generate phase only, with no database and none of the
    constants Hypothesis mines from the process's modules, so the same seed
    gives the same programs in any process.
    """
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hypothesis_seed

    from pytest_cgraph.strategies.seeded_draws import without_local_constants

    drawn: list[Program] = []

    @settings(
        max_examples=count,
        phases=[Phase.generate],
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @hypothesis_seed(seed)
    @given(programs(families=families, device=device))
    def collect(program: Program) -> None:
        drawn.append(program)

    with without_local_constants():
        collect()
    return drawn


@st.composite
def _programs(
    draw: Any,
    families: tuple[str, ...],
    min_statements: int,
    max_statements: int,
    max_inputs: int,
    iters: int,
    device: str = "cpu",
) -> Program:
    family = draw(st.sampled_from(families))
    schedule = _draw_schedule(draw, family)
    # Compiled autograd is an option of the run, drawn where backward is, and
    # drawn early: a draw after the statements would hamper their deletion.
    compiled_autograd = family in ("autograd", "training", "mixed") and draw(_ONE_IN_FOUR) == 3
    # A memory budget for the partitioner, one time in eight where a backward
    # recomputes (random ops, autograd). Drawn early, like compiled autograd;
    # not in mixed, whose programs it kept from shrinking to one statement.
    compile_config: tuple[tuple[str, object], ...] = ()
    if family in ("rng", "autograd") and draw(_ONE_IN_EIGHT) == 7:
        compile_config = ((_MEMORY_BUDGET_SETTING, draw(_MEMORY_BUDGET)),)
    optimizer, set_to_none = OPTIMIZERS[0], True
    if schedule == "optimizer":
        optimizer, set_to_none = draw(_OPTIMIZER), draw(_COIN)
    module_hook = draw(_MODULE_HOOK) if schedule == "module_hooks" else MODULE_HOOKS[0]
    # Two separately compiled functions, the second taking over at a drawn
    # statement (clamped to the statements kept), one time in four.
    chain_at = draw(st.integers(1, max_statements)) if draw(_ONE_IN_FOUR) == 3 else 0
    # An ambient autocast, no_grad or inference_mode around every call, one time in four.
    mode = draw(_AMBIENT) if draw(_ONE_IN_FOUR) == 3 else "grad"
    autocast = "bfloat16" if mode == "autocast" else None
    mode = "grad" if mode == "autocast" else mode
    # A memory budget matters only where a backward saves values: such a
    # program draws its inputs as the autograd family does (the first one
    # that can requires grad).
    inputs = draw(_input_specs(family, max_inputs, schedule, bool(compile_config)))
    draft = Program(family, inputs, (), (inputs[0].name,), schedule, iters)
    namespace: dict[str, Any] = {"torch": torch, "random": random}
    with _random_numbers_of_its_own():
        for definition in draft.preludes():  # the classes module inputs are built from
            exec(compile(definition, "<prelude>", "exec"), namespace)
        exec(compile(draft.render_inputs(), "<inputs>", "exec"), namespace)
        values = namespace["inputs"](1)
        if schedule == "module_hooks":
            # Statements are judged with the hook on, as calls after the
            # first meet them: a full backward hook wraps the module's output,
            # and writing that output in place then raises.
            for spec, value in zip(inputs, values, strict=True):
                if spec.role == "module":
                    exec(compile(f"module.{module_hook}", "<hook>", "exec"), {"module": value})
        variables = [
            Var(spec.name, value, _origin_of(spec))
            for spec, value in zip(inputs, values, strict=True)
        ]
        env: dict[str, Any] = {"torch": torch, **{v.name: v.value for v in variables}}
        # A module argument is called at once on the first floating input, so
        # it is used whenever it is drawn; deleting the argument deletes the
        # call. Drawn under the mode the calls will run under: torch judges
        # each statement as the program will meet it.
        # The autocast's device is the one the draft's tensors are on (the
        # checking run moves them to the run's device, and sets it there).
        with ambient(mode, autocast, device_type_of(values)):
            opening = _module_calls(variables, env)
            basic, own = ops_for(family, device)
            opening += _holder_steps(draw, own, variables, env)
            if family == "training":
                opening += _loss_backward(variables, env)
            # mixed mixes every hazard class evenly (a class first, then an op).
            strata = hazard_strata(own) if family == "mixed" else ()
            statements = opening + _draw_statements(
                draw, (basic, own), strata, variables, env, min_statements, max_statements
            )
    if any(statement.op == "local_class" for statement in statements) and has_compile_setting(
        TRACE_BUILD_CLASS
    ):
        compile_config = (*compile_config, (TRACE_BUILD_CLASS, True))
    outputs = _draw_outputs(draw, variables)
    features = _output_features(outputs, variables, inputs)
    feedback = _feedback(outputs, variables, inputs) if schedule == "feedback" else None
    if schedule == "feedback" and feedback is None:
        schedule = "persistent"
    return Program(
        family=family,
        inputs=inputs,
        statements=tuple(statements),
        outputs=tuple(outputs),
        schedule=schedule,
        iters=iters,
        feedback=feedback,
        compiled_autograd=compiled_autograd,
        optimizer=optimizer,
        set_to_none=set_to_none,
        module_hook=module_hook,
        chain_at=max(0, min(chain_at, len(statements) - 1)),
        grad_mode=mode,
        autocast=autocast,
        compile_config=compile_config,
        features=frozenset({f"family:{family}", *features}),
    )


#: What torch's global generator is seeded with while a program is drawn.
_DRAWING_SEED = 0


@contextlib.contextmanager
def _random_numbers_of_its_own() -> Iterator[None]:
    """Torch's global (CPU) generator seeded alike for every program drawn, and
    handed back as it was found.

    The values a random op gives while its statement is judged can decide
    whether a later statement is legal (a mask's count decides a view's
    size). Taken from wherever the process's generator stood, the same
    choices could draw another program once the process has run something
    else: Hypothesis replays choices to shrink, and calls that flaky, and a
    campaign's seed would not give its programs back. Drawing would also
    move the random numbers the caller's own code sees next.
    """
    with torch.random.fork_rng(devices=[]):
        torch.default_generator.manual_seed(_DRAWING_SEED)
        yield


def _draw_schedule(draw: Any, family: str) -> str:
    if family in ("schedules", "mixed"):
        schedule: str = draw(_SCHEDULE)
        if schedule == "module_hooks" and draw(_ONE_IN_FOUR) != 3:
            # On torch 2.13 and 2.14 every program of it differs by a known
            # bug (no guard on module hooks): drawn a quarter as often as
            # the others, so that it costs the campaign little.
            return "persistent"
        return schedule
    if family == "scalars":
        return "fresh"  # host scalars that change every call
    if family == "training":
        # Parameters kept across calls, as a loop keeps them; or the step's
        # optimizer, or a hand-written update, run between the compiled calls.
        return str(draw(_TRAINING_SCHEDULE))
    if family == "serving":
        return str(draw(_SERVING_SCHEDULE))
    return "persistent"


def _origin_of(spec: InputSpec) -> str:
    objects = ("parameter", "scalar", "number", "module", "random", "holder")
    return spec.role if spec.role in objects else "input"


@st.composite
def _input_specs(
    draw: Any, family: str, max_inputs: int, schedule: str, backward: bool = False
) -> tuple[InputSpec, ...]:
    roles = _ROLES_BY_FAMILY.get(family, ROLES)
    grads_as = "autograd" if backward or family == "training" else family
    specs: list[InputSpec] = [draw(_tensor_spec(family, "argument", 0, (), schedule, grads_as))]
    while len(specs) < max_inputs and draw(_COIN):
        role = draw(st.sampled_from(roles))
        specs.append(draw(_tensor_spec(family, role, len(specs), tuple(specs), schedule, grads_as)))
    if schedule in ("param_update", "optimizer") and not any(s.role == "parameter" for s in specs):
        specs.append(InputSpec(f"p{len(specs)}", "parameter", (2,), "float32", True))
    if schedule == "module_hooks" and not any(s.role == "module" for s in specs):
        specs.append(InputSpec(f"m{len(specs)}", "module"))
    if family == "scalars" and not any(s.is_host_scalar for s in specs):
        specs.append(InputSpec(f"s{len(specs)}", "scalar", (), "float32"))
    return tuple(specs)


@st.composite
def _tensor_spec(
    draw: Any,
    family: str,
    role: str,
    index: int,
    earlier: tuple[InputSpec, ...],
    schedule: str = "persistent",
    grads_as: str | None = None,
) -> InputSpec:
    """One input's spec; ``grads_as`` is the family whose odds of requiring grad it
    takes (its own by default)."""
    name = f"{_PREFIX[role]}{index}"
    if role in ("scalar", "number", "module", "random", "holder"):
        return InputSpec(name, role, (), "float32")
    shape = tuple(draw(_SHAPES))
    if role == "parameter":
        return InputSpec(name, role, shape, "float32", requires_grad=True)
    dtype = draw(_DTYPE) if draw(_ONE_IN_FOUR) == 3 else "float32"
    layout = draw(_LAYOUT)
    if schedule not in FRESH_SCHEDULES:
        if layout == "alias_sometimes":
            layout = "alias"  # inputs are built once: aliased on every call
    elif layout == "alias" and draw(_COIN):
        layout = "alias_sometimes"  # rebuilt each call: alias only on some
    alias_of = None
    if layout.startswith("alias"):
        start = 1 if layout == "alias_offset" else 0
        owners = [
            s
            for s in earlier
            if s.layout == "contiguous"
            and s.role in ("argument", "buffer")
            and math.prod(s.shape) > start
        ]
        if owners:
            owner = draw(st.sampled_from(owners))
            alias_of, dtype = owner.name, owner.dtype
            if math.prod(shape) + start > math.prod(owner.shape):
                shape = (math.prod(owner.shape) - start,)  # what fits: a flat alias
        else:
            layout = "contiguous"
    if layout == "transposed" and len(shape) < 2:
        layout = "contiguous"
    if layout == "nonleaf":
        # Built anew each call, as activations are: reused, its history
        # would be backpropagated through again by the next call.
        if role != "argument" or schedule not in FRESH_SCHEDULES:
            layout = "contiguous"
        else:
            dtype = dtype if dtype in _DIFFERENTIABLE else "float32"
            return InputSpec(name, role, shape, dtype, True, layout)
    differentiable = dtype in _DIFFERENTIABLE and layout == "contiguous" and role == "argument"
    grads_as = grads_as or family
    if grads_as == "autograd":
        requires_grad = differentiable and (index == 0 or draw(_COIN))
    else:
        chance = 2 if grads_as in ("mixed", "schedules") else 4
        requires_grad = differentiable and draw(st.integers(0, chance - 1)) == chance - 1
    return InputSpec(name, role, shape, dtype, requires_grad, layout, alias_of)


def _module_calls(variables: list[Var], env: dict[str, Any]) -> list[Statement]:
    """``v = m(a)`` for each module argument, on the first floating tensor input."""
    first = next(
        (v for v in variables if v.tensor is not None and v.tensor.is_floating_point()), None
    )
    calls = []
    for module in [v for v in variables if v.origin == "module"]:
        if first is None:
            break
        name = _next_name(variables)
        line = f"{name} = {module.name}({first.name})"
        if _runs_cleanly([line], env):
            variables.append(Var(name, env[name], "intermediate"))
            calls.append(Statement("module_call", (line,), (name,), frozenset({"module_call"})))
    return calls


def _holder_steps(
    draw: Any, own: tuple[OpSpec, ...], variables: list[Var], env: dict[str, Any]
) -> list[Statement]:
    """A first read-and-write of a ``Holder`` argument's state, drawn at once, so
    that the argument is used whenever it is drawn (as a module is called)."""
    step = next((op for op in own if op.name == "python_state"), None)
    first = next((v for v in variables if v.tensor is not None), None)
    if step is None or first is None or not any(v.origin == "holder" for v in variables):
        return []
    name = _next_name(variables)
    built = step.build(Context(draw, first, variables, name))
    if built is None or not _runs_cleanly(built[0], env):
        return []
    variables.append(Var(name, env[name], "intermediate"))
    return [Statement(step.name, tuple(built[0]), (name,), frozenset({step.name}))]


def _loss_backward(variables: list[Var], env: dict[str, Any]) -> list[Statement]:
    """A training step's first backward, of a loss over every input that requires
    grad, so that the step's updates find gradients to apply (a loop's
    ``loss.backward()`` comes before its ``optimizer.step()``)."""
    leaves = [
        v.name
        for v in variables
        if v.tensor is not None and v.tensor.requires_grad and v.tensor.is_floating_point()
    ]
    if not leaves:
        return []
    loss = " + ".join(f"{name}.pow(2).sum()" for name in leaves)
    lines = [f"({loss}).backward()" if len(leaves) > 1 else f"{loss}.backward()"]
    if not _runs_cleanly(lines, env):
        return []
    return [Statement("backward", tuple(lines), (), frozenset({"backward", "loss_backward"}))]


def _next_name(variables: list[Var]) -> str:
    """The name the next statement's result is bound to: ``v0``, ``v1``, ..."""
    return f"v{sum(1 for v in variables if v.name.startswith('v'))}"


def _draw_statements(
    draw: Any,
    ops: tuple[tuple[OpSpec, ...], tuple[OpSpec, ...]],
    strata: tuple[tuple[OpSpec, ...], ...],
    variables: list[Var],
    env: dict[str, Any],
    min_statements: int,
    max_statements: int,
) -> list[Statement]:
    statements: list[Statement] = []
    attempts = 0
    while len(statements) < max_statements and attempts < 4 * max_statements:
        attempts += 1
        # Each attempt, its continue/stop flag included, is one nested draw:
        # the shrinker sees it as one unit and can delete it whole.
        statement = draw(
            _statements(ops, strata, variables, env, len(statements) >= min_statements)
        )
        if statement is _STOP:
            break
        if statement is not None:
            statements.append(statement)
    else:
        # Ended by the bound, not by a stop draw: the stop flag is drawn all
        # the same, and ignored. Once deleting a statement leaves one draw
        # short, that choice reads as the next attempt's flag (0, "stop", once
        # shrunk, as it is unused), as the flag Hypothesis forces at a list's
        # max_size does; without it the program runs off the end of its
        # choices and no statement of a full program can be deleted.
        draw(_ONE_IN_SIX)
    return statements


_STOP = Statement("stop", ())


@st.composite
def _statements(
    draw: Any,
    ops: tuple[tuple[OpSpec, ...], tuple[OpSpec, ...]],
    strata: tuple[tuple[OpSpec, ...], ...],
    variables: list[Var],
    env: dict[str, Any],
    may_stop: bool,
) -> Statement | None:
    """One statement drawn against the live variables, executed at once, or ``None``.

    Returns ``_STOP`` when the program should end here (0 is where that
    draw shrinks to). Appends the variable it binds to ``variables``.
    """
    if may_stop and draw(_ONE_IN_SIX) == 0:
        return _STOP
    basic, own = ops
    # The family's own ops seven times in eight; shrinks towards the basic ones.
    pool = own if own and draw(_ONE_IN_EIGHT) else basic
    if strata and pool is own:
        # A hazard class, then an op of it (``strata``: ``own`` by class).
        pool = strata[draw(_WIDE) % len(strata)]
    # Hypothesis favours small indices in sampled_from; a wide integer taken
    # modulo the pool spreads draws evenly and still shrinks to pool[0].
    op = pool[draw(_WIDE) % len(pool)]
    # Inputs first, then results newest first: deleting an unrelated earlier
    # statement leaves both an input's index and a chain on the latest value
    # where they were, so the shrinker can delete it.
    applicable = [v for v in variables if _applies(op, v)]
    candidates = [v for v in applicable if v.origin in _INPUT_ORIGINS] + [
        v for v in reversed(applicable) if v.origin not in _INPUT_ORIGINS
    ]
    if not candidates:
        return None
    target = draw(st.sampled_from(candidates))
    new_name = _next_name(variables)
    built = op.build(Context(draw, target, variables, new_name))
    if built is None:
        return None
    lines, binds = built
    prelude = templates_used(lines)
    if not _runs_cleanly([*prelude, *lines], env, op.tolerated_warning):
        return None
    features = {op.name, *_target_features(op, target, variables)}
    if binds:
        variables.append(Var(new_name, env[new_name], _result_origin(op)))
    return Statement(
        op.name, tuple(lines), (new_name,) if binds else (), frozenset(features), prelude
    )


_INPUT_ORIGINS = ("input", "parameter", "scalar", "number")


def _applies(op: OpSpec, var: Var) -> bool:
    """Whether ``op`` may target ``var``; a variable torch refuses to inspect may not.

    (Reading an invalidated view, e.g. one of ``split``'s outputs after its
    base was written in place, raises.)
    """
    try:
        return op.applies(var)
    except RuntimeError:
        return False


def _runs_cleanly(lines: list[str], env: dict[str, Any], tolerated: str = "") -> bool:
    """Execute the statement on the concrete values; torch decides legality.

    A warning counts as a rejection too: under ``-W error`` it would make the
    eager side raise. The one an op tolerates (``tolerated``, the start of
    its message) does not: the op exists to test what eager warns about.
    torch gives some warnings once per process; they are made to warn every
    time here, or a statement would be rejected the
    first time a process draws it and kept after, and the same choices would
    draw another program (Hypothesis replays choices: it calls that a flaky
    strategy, and a campaign's seed would not give its programs back).
    """
    warn_always = torch.is_warn_always_enabled()
    torch.set_warn_always(True)
    try:
        code = compile("\n".join(lines), "<statement>", "exec")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            exec(code, env)
    except Exception:
        return False
    finally:
        torch.set_warn_always(warn_always)
    return all(tolerated and str(warning.message).startswith(tolerated) for warning in caught)


def _target_features(op: OpSpec, target: Var, variables: list[Var]) -> set[str]:
    """Where a mutation lands: on an input, an intermediate, through a view (of an input)."""
    found: set[str] = set()
    tensor = target.tensor
    if op.kind not in ("inplace", "metadata") or tensor is None:
        return found
    found.add(f"{op.kind}_on_{target.origin}")
    if tensor._is_view():
        found.add(f"{op.kind}_through_view")
        if tensor.numel() and tensor.untyped_storage().data_ptr() in _input_storages(variables):
            found.add(f"{op.kind}_through_view_of_input")
    return found


def _input_storages(variables: list[Var]) -> set[int]:
    return {
        v.tensor.untyped_storage().data_ptr()
        for v in variables
        if v.origin in ("input", "parameter") and v.tensor is not None and v.tensor.numel()
    }


def _result_origin(op: OpSpec) -> str:
    # A Python value read off a tensor feeds later statements as host scalars do.
    return {"view": "view", "factory": "factory", "metadata_read": "scalar"}.get(
        op.kind, "intermediate"
    )


def _draw_outputs(draw: Any, variables: list[Var]) -> list[str]:
    # Latest variables first: outputs shrink towards the last result.
    tensors = [v.name for v in reversed(variables) if v.tensor is not None]
    outputs = [draw(st.sampled_from(tensors))]
    while len(outputs) < 3 and draw(_COIN):
        outputs.append(draw(st.sampled_from(tensors)))
    return outputs


def _output_features(
    outputs: list[str], variables: list[Var], inputs: tuple[InputSpec, ...]
) -> set[str]:
    found = set()
    if len(set(outputs)) < len(outputs):
        found.add("returns_same_tensor_twice")
    by_name = {v.name: v for v in variables}
    input_pointers = _input_storages(variables)
    for name in outputs:
        tensor = by_name[name].tensor
        if tensor is not None and tensor.numel():
            if by_name[name].origin in ("input", "parameter"):
                found.add("returns_input")
            elif tensor.untyped_storage().data_ptr() in input_pointers:
                found.add("returns_view_of_input")
    if any(spec.layout.startswith("alias") for spec in inputs):
        found.add("aliased_inputs")
    return found


def _feedback(
    outputs: list[str], variables: list[Var], inputs: tuple[InputSpec, ...]
) -> tuple[int, int] | None:
    """(output index, argument index) of an output that can stand in for an argument."""
    by_name = {v.name: v for v in variables}
    for arg_index, spec in enumerate(inputs):
        if spec.role not in ("argument", "buffer") or spec.requires_grad:
            continue
        wanted = by_name[spec.name].tensor
        for out_index, name in enumerate(outputs):
            got = by_name[name].tensor
            try:
                fits = (
                    wanted is not None
                    and got is not None
                    and got.shape == wanted.shape
                    and got.dtype == wanted.dtype
                    and not got.requires_grad
                )
            except RuntimeError:  # an invalidated view: not a candidate
                fits = False
            if fits:
                return out_index, arg_index
    return None
