"""Run one program eagerly and compiled for N iterations, and judge every iteration.

Per iteration both sides start from identical arguments and the same RNG
seed (a new seed each iteration, so a random stream frozen at record time
shows); after the call everything observable is snapshotted at once,
because a CUDA-graph replay overwrites its outputs in place. After the last
iteration the raw outputs kept from every iteration are read again: each
must still equal eager's or raise the documented "overwritten by a
subsequent run" error.
"""

from __future__ import annotations

import contextlib
import inspect
import traceback
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import torch
import torch.utils._pytree as pytree

from pytest_cgraph.oracle.compare import (
    TensorSnapshot,
    Tolerance,
    compare_iteration,
    compare_values,
    crash_difference,
    layout_of,
)
from pytest_cgraph.oracle.compiling import (
    Backend,
    DeviceOps,
    ambient,
    captured_graph_count,
    collect_compile_evidence,
    comparable_inductor,
    compile_config,
    compile_context_left_as_found,
    compiled_autograd_engine,
    device_ops_for,
    mark_step,
    reset_compiler_state,
    saved_tensors_hooks_left_as_found,
    without_captured_trace,
    without_guard_profiling,
)
from pytest_cgraph.oracle.difference import (
    OVERWRITTEN_OUTPUT_MESSAGE,
    Difference,
    Kind,
    Place,
    Role,
)
from pytest_cgraph.oracle.errors import (
    ConfigurationError,
    EagerDisagrees,
    EquivalenceError,
    InvalidProgram,
)
from pytest_cgraph.oracle.graphs import ObjectGraph
from pytest_cgraph.oracle.observe import (
    Observation,
    describe_aliasing,
    observed_arguments,
    snapshot,
)
from pytest_cgraph.oracle.protocol import PROGRAM, ProgramSpec, forget_source, load_source
from pytest_cgraph.oracle.rounding import (
    RandomDraws,
    explained_by_rounding,
    generator_states,
    may_be_rounding,
    to_float64,
    value_at,
)
from pytest_cgraph.oracle.sides import clone_arguments, following_copies

BackwardPolicy = Literal["auto"] | bool
FreshArgs = Callable[[int], Sequence[Any]]
#: ``advance(k, args, outputs)``: the arguments of call k+1 from call k's, per side.
Advance = Callable[[int, tuple[Any, ...], tuple[Any, ...]], Sequence[Any]]


@dataclass(frozen=True)
class CheckSettings:
    """How one check runs.

    ``ops`` is the device handling (synchronise, seed), chosen from the
    arguments' device when ``None``; tests pass a recording double to drive
    the CUDA path on CPU.
    """

    backend: Backend
    iters: int = 5
    device: torch.device | None = None
    backward: BackwardPolicy = "auto"
    tolerance: Tolerance = field(default_factory=Tolerance)
    seed: int = 0
    ops: DeviceOps | None = None
    compiled_autograd: bool = False
    grad_mode: str = "grad"
    #: The dtype of an autocast around each call (the protocol's ``AUTOCAST``), or ``None``.
    autocast: str | None = None
    #: Compile settings in force on the compiled side (the protocol's ``COMPILE_CONFIG``).
    compile_config: tuple[tuple[str, Any], ...] = ()
    #: A floating difference counts only if compiled strays further from a
    #: float64 run of eager than eager does (:mod:`~pytest_cgraph.oracle.rounding`).
    float64_reference: bool = True


@dataclass(frozen=True)
class CheckReport:
    """What a passing check did, stated from torch's own counters and logs.

    ``graphs_captured`` counts graphs really recorded by CUDA-graph trees;
    on CPU it is 0 and ``skip_reasons`` says why torch skipped capture.
    """

    iterations: int
    backend: str
    device: str
    compiles: int
    graphs_captured: int
    graphs_skipped: int
    skip_reasons: dict[str, int]
    outputs_overwritten: int
    tensor_outputs: int = 0
    #: Kept outputs a later compiled call returned again, or whose memory a
    #: later output occupies (CUDA-graph trees' cached or rebuilt replay
    #: outputs): overwritten as documented, without the error.
    outputs_returned_again: int = 0
    #: The type of what the function returned (eager, first call).
    returned: str = ""

    def summary(self) -> str:
        """One line for a terminal."""
        reasons = ", ".join(f"{reason} x{count}" for reason, count in self.skip_reasons.items())
        skipped = f"{self.graphs_skipped} skipped" + (f" ({reasons})" if reasons else "")
        return (
            f"{self.iterations} iterations on {self.device} with {self.backend}: "
            f"{self.compiles} graph(s) compiled, {self.graphs_captured} captured, {skipped}"
        )


@contextlib.contextmanager
def intra_op_threads(count: int | None) -> Iterator[None]:
    """Run the block with torch's intra-op pool at ``count`` threads (``None``: as it is).

    How many threads torch runs is a condition of a check: Inductor's CPU
    code generation takes other paths with one thread than with several
    (pytorch/pytorch#191837 asserts only with two or more), so a program is
    checked, shrunk, located and replayed with the count it was found with.
    The pool is set back afterwards: the process checks other programs.
    """
    if count is None or count == torch.get_num_threads():
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def check_source(
    source: str,
    *,
    backend: Backend,
    device: torch.device | None = None,
    iters: int | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    seed: int = 0,
) -> CheckReport:
    """Check a program's source (see :mod:`~pytest_cgraph.oracle.protocol`).

    The source is the only thing executed, so what is checked here is
    exactly what a repro file holds. Arguments given here win over the
    source's own ``ITERS``, ``RTOL`` and ``ATOL``.
    """
    spec = ProgramSpec.of(load_source(source))
    try:
        settings = CheckSettings(
            backend=backend,
            iters=iters if iters is not None else spec.iters,
            device=device,
            tolerance=Tolerance(
                rtol if rtol is not None else spec.rtol, atol if atol is not None else spec.atol
            ),
            seed=seed,
            compiled_autograd=spec.compiled_autograd,
            grad_mode=spec.grad_mode,
            autocast=spec.autocast,
            compile_config=spec.compile_config,
        )
        compiled = None
        if spec.compiled_names != (PROGRAM,):
            # The compiled side's own copy of the source, with the named
            # functions compiled: ``program`` is then Python glue calling them.
            glue = load_source(source)
            for name in spec.compiled_names:
                glue[name] = backend.compile(glue[name])
            compiled = glue[PROGRAM]
        args = () if spec.fresh_inputs else tuple(spec.inputs(1))
        return run_check(
            spec.program,
            args,
            spec.inputs if spec.fresh_inputs else None,
            settings,
            spec.advance,
            compiled=compiled,
        )
    finally:
        # Registered for tracebacks while it runs; kept, 2,000 programs' lines
        # would be ~3 MB that the harness alone holds on to.
        forget_source(source)


def run_check(
    fn: Callable[..., Any],
    args: Sequence[Any],
    fresh_args: FreshArgs | None,
    settings: CheckSettings,
    advance: Advance | None = None,
    compiled: Callable[..., Any] | None = None,
) -> CheckReport:
    """The iteration loop: ``fn`` eagerly beside ``compiled`` (``fn`` compiled by default).

    ``advance``, when given, derives each side's next arguments from its own
    arguments and outputs (parameter updates, outputs fed back); it runs the
    same code on both sides, so the sides stay comparable.

    Warnings are recorded and dropped: torch's compile-time notices must not
    reach the user's terminal, nor turn into exceptions (and so into false
    crashes) under ``-W error``.
    """
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        reset_compiler_state()
        try:
            return _iterate(
                fn, compiled or settings.backend.compile(fn), args, fresh_args, settings, advance
            )
        finally:
            reset_compiler_state()


@dataclass
class _Side:
    """One side's function and its current flat arguments.

    ``own_backward``: the program's last call ran a backward of its own that
    freed its graph (a training step's ``loss.backward()``). Eager finds it
    out; the compiled side follows eager, so both sides do the same after.
    """

    fn: Callable[..., Any]
    compiled: bool
    flat: list[Any] = field(default_factory=list)
    own_backward: bool = False


class _BackwardWatch:
    """Stands in for the autograd engine while eager's call runs, to see whether
    the program ran a backward that freed its graph.

    Every way into a backward (``Tensor.backward``, ``torch.autograd.backward``
    and ``grad``, however imported) ends in the engine's ``run_backward``, so
    this sees them all; everything else is the engine's own.
    """

    def __init__(self, engine: Any) -> None:
        self._engine = engine
        self.freed_graph = False

    def run_backward(self, *args: Any, **kwargs: Any) -> Any:
        # run_backward(outputs, grad_outputs, keep_graph, create_graph, inputs, ...)
        keep_graph = kwargs["keep_graph"] if "keep_graph" in kwargs else args[2]
        # A backward inside a torch.func transform (func.grad's own) frees a
        # graph of the transform's wrapped tensors, not the program's: the
        # check's backward over the outputs still has its graph.
        inside_transform = torch._C._functorch.maybe_current_level() is not None
        self.freed_graph = self.freed_graph or not (keep_graph or inside_transform)
        return self._engine.run_backward(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)


@contextlib.contextmanager
def watching_backward() -> Iterator[_BackwardWatch]:
    """Watch the backward passes run inside the block (see :class:`_BackwardWatch`)."""
    from torch.autograd.variable import Variable

    engine = Variable._execution_engine
    watch = _BackwardWatch(engine)
    Variable._execution_engine = watch  # type: ignore[assignment]
    try:
        yield watch
    finally:
        Variable._execution_engine = engine


def _iterate(
    fn: Callable[..., Any],
    compiled_fn: Callable[..., Any],
    args: Sequence[Any],
    fresh_args: FreshArgs | None,
    settings: CheckSettings,
    advance: Advance | None,
) -> CheckReport:
    eager, compiled = _Side(fn, False), _Side(compiled_fn, True)
    retained: list[tuple[list[Any], list[Any]]] = []
    #: Per iteration, the outputs whose difference rounding explained, as each
    #: side returned them: re-read unchanged, they are no stale output.
    rounded: list[dict[int, tuple[TensorSnapshot, TensorSnapshot]]] = []
    device, ops = settings.device, settings.ops
    spec: Any = None
    names: list[str] = []
    tensor_outputs = 0
    returned = ""
    reference = _Float64Reference(fn, args, fresh_args, settings, advance)
    with (
        collect_compile_evidence() as evidence,
        comparable_inductor(),
        without_guard_profiling(),
        without_captured_trace(),
    ):
        for k in range(1, settings.iters + 1):
            if fresh_args is not None or spec is None:
                flat, spec, names = _call_arguments(fn, args, fresh_args, k)
                device = device or _device_of(flat)
                ops = ops or device_ops_for(device)
                # One walk of the arguments' object graph serves both copies.
                graph = ObjectGraph(flat)
                eager.flat = clone_arguments(flat, settings.device, names, graph)
                compiled.flat = clone_arguments(flat, settings.device, names, graph)
            assert ops is not None
            seen, eager_raw = _run_eager_side(eager, spec, names, k, settings, ops)
            if seen.error is not None:
                raise InvalidProgram(k, seen.phase, seen.error)
            compiled.own_backward = eager.own_backward
            if k == 1:
                tensor_outputs = sum(isinstance(o, TensorSnapshot) for o in seen.outputs)
                returned = seen.returned
            with (
                compile_context_left_as_found(),
                saved_tensors_hooks_left_as_found(),
                compiled_autograd_engine(settings.backend, settings.compiled_autograd),
                compile_config(settings.compile_config),
            ):
                compiled_seen, compiled_raw = _run_compiled_side(
                    compiled, spec, names, k, settings, ops
                )
            difference = compare_iteration(seen, compiled_seen, k, settings.tolerance)
            excused: set[Place] = set()
            if difference is not None:
                _confirm_eager(fn, args, fresh_args, settings, advance, k, seen, ops)
                while difference is not None and reference.explains(
                    difference, seen, compiled_seen, ops
                ):
                    excused.add(difference.place)
                    difference = compare_iteration(
                        seen, compiled_seen, k, settings.tolerance, excused
                    )
            rounded.append(
                {
                    place.index: (seen.outputs[place.index], compiled_seen.outputs[place.index])
                    for place in excused
                    if place.role is Role.OUTPUT and place.index is not None
                }
            )
            if difference is not None:
                raise EquivalenceError(difference, _context(settings, device))
            retained.append((eager_raw, compiled_raw))
            if k < settings.iters:
                for side, raw in ((eager, eager_raw), (compiled, compiled_raw)):
                    _between_calls(side, advance, k, spec, raw, settings, ops)
        assert ops is not None
        ops.synchronize()
        captured = captured_graph_count(settings.backend)
        # Only where graphs were captured on a device with a graph pool (CUDA):
        # on CPU the trees skip capture, and a kept output changed under a
        # later output's memory is a bug there.
        in_pool = captured > 0 and ops.grads_in_graph_pool
        difference, overwritten, reused = _check_retained(retained, settings, in_pool, rounded)
        retained.clear()
        if difference is not None:
            raise EquivalenceError(difference, _context(settings, device))
    return CheckReport(
        iterations=settings.iters,
        backend=settings.backend.name,
        device=str(device),
        compiles=evidence.compiles,
        graphs_captured=captured,
        graphs_skipped=evidence.skips,
        skip_reasons=dict(evidence.skip_reasons),
        outputs_overwritten=overwritten,
        outputs_returned_again=reused,
        tensor_outputs=tensor_outputs,
        returned=returned,
    )


def _call_arguments(
    fn: Callable[..., Any], args: Sequence[Any], fresh_args: FreshArgs | None, iteration: int
) -> tuple[list[Any], pytree.TreeSpec, list[str]]:
    """The arguments of call ``iteration`` (the same each call, unless fresh),
    flattened: the leaves, their structure and their names."""
    base = tuple(fresh_args(iteration)) if fresh_args is not None else tuple(args)
    flat, spec = pytree.tree_flatten(base)
    return flat, spec, argument_names(fn, base)


def _confirm_eager(
    fn: Callable[..., Any],
    args: Sequence[Any],
    fresh_args: FreshArgs | None,
    settings: CheckSettings,
    advance: Advance | None,
    iteration: int,
    seen: Observation,
    ops: DeviceOps,
) -> None:
    """Run eager alone again, from fresh copies, up to ``iteration``; raise
    :class:`EagerDisagrees` unless it observes again what it observed (``seen``).

    Asked only once compiled code differs, so it costs a passing program
    nothing. Each call is seeded as before, so only what no seed reaches
    (uninitialised memory above all) makes eager disagree with itself.
    """
    side = _Side(fn, False)
    spec: Any = None
    names: list[str] = []
    again = Observation()
    for k in range(1, iteration + 1):
        if fresh_args is not None or spec is None:
            flat, spec, names = _call_arguments(fn, args, fresh_args, k)
            side.flat = clone_arguments(flat, settings.device, names)
        again, raw = _run_eager_side(side, spec, names, k, settings, ops)
        if again.error is not None:
            raise EagerDisagrees(k, f"it raised {type(again.error).__name__} this time")
        if k < iteration:
            _between_calls(side, advance, k, spec, raw, settings, ops)
    differs = compare_iteration(seen, again, iteration, settings.tolerance)
    if differs is not None:
        raise EagerDisagrees(iteration, differs.headline())


class _Float64Reference:
    """Eager again, in float64, from fresh copies of the arguments: the exact answer
    a floating difference is measured against (see :mod:`~pytest_cgraph.oracle.rounding`).

    Run only once compiled code differs, and only as far as the iteration
    asked about; ``None`` where it cannot stand for the exact answer.
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        args: Sequence[Any],
        fresh_args: FreshArgs | None,
        settings: CheckSettings,
        advance: Advance | None,
    ) -> None:
        self._fn, self._args, self._fresh_args = fn, args, fresh_args
        self._settings, self._advance = settings, advance
        self._side = _Side(fn, False)
        #: eager at the program's own precision, run beside for its random draws
        self._at_precision = _Side(fn, False)
        self._spec: Any = None
        self._names: list[str] = []
        self._seen: list[Observation] = []
        #: what the run at the program's precision observed, per iteration
        self._seen_at_precision: list[Observation] = []
        self._usable = settings.float64_reference

    def explains(
        self, difference: Difference, eager: Observation, compiled: Observation, ops: DeviceOps
    ) -> bool:
        """Whether rounding explains ``difference`` (eager's and compiled's observations)."""
        if not may_be_rounding(difference, value_at(eager, difference.place)):
            return False
        exact = self._observation(difference.iteration, ops)
        if exact is None:
            return False
        # The draws given to float64 are those of a run that must be eager's own.
        again = self._seen_at_precision[difference.iteration - 1]
        if compare_iteration(eager, again, difference.iteration, self._settings.tolerance):
            return False
        return explained_by_rounding(
            difference.place, eager, compiled, exact, self._settings.tolerance
        )

    def _observation(self, iteration: int, ops: DeviceOps) -> Observation | None:
        while self._usable and len(self._seen) < iteration:
            self._step(len(self._seen) + 1, ops)
        return self._seen[iteration - 1] if self._usable else None

    def _step(self, k: int, ops: DeviceOps) -> None:
        settings = self._settings
        if self._fresh_args is not None or self._spec is None:
            flat, self._spec, self._names = _call_arguments(
                self._fn, self._args, self._fresh_args, k
            )
            graph = ObjectGraph(flat)
            self._at_precision.flat = clone_arguments(flat, settings.device, self._names, graph)
            self._side.flat = clone_arguments(flat, settings.device, self._names, graph)
            if not to_float64(self._side.flat):
                self._usable = False
                return
        # Eager once more at the program's precision, for its random draws,
        # which the float64 run is then given (float64 draws other numbers).
        ops.manual_seed(settings.seed + k)
        recorded = RandomDraws()
        with recorded:
            seen_at_precision, raw_at_precision = _run_eager_side(
                self._at_precision, self._spec, self._names, k, settings, ops
            )
        ops.manual_seed(settings.seed + k)
        seeded = generator_states()
        played = RandomDraws(recorded.draws)
        default_dtype = torch.get_default_dtype()
        torch.set_default_dtype(torch.float64)
        try:
            with played:
                seen, raw = _run_eager_side(self._side, self._spec, self._names, k, settings, ops)
        finally:
            torch.set_default_dtype(default_dtype)
        # A generator that moved with no draw seen is randomness not carried over
        # (every aten op that draws is seen; this is for an op outside aten).
        # Where draws were seen, the generators move by them and cannot tell.
        drew_unseen = not recorded.draws and any(
            not torch.equal(now, then) for now, then in zip(generator_states(), seeded, strict=True)
        )
        failed = seen.error is not None or seen_at_precision.error is not None
        if failed or not (recorded.faithful and played.complete) or drew_unseen:
            self._usable = False
            return
        self._seen.append(seen)
        self._seen_at_precision.append(seen_at_precision)
        if k < settings.iters:
            _between_calls(self._side, self._advance, k, self._spec, raw, settings, ops)
            _between_calls(
                self._at_precision, self._advance, k, self._spec, raw_at_precision, settings, ops
            )


def _run_eager_side(*arguments: Any) -> tuple[Observation, list[Any]]:
    """:func:`_run_side` for eager, in a frame of its own: the dump of a process
    that dies here says eager killed it (``difference.EAGER_FRAME``)."""
    return _run_side(*arguments)


def _run_compiled_side(*arguments: Any) -> tuple[Observation, list[Any]]:
    """:func:`_run_side` for the compiled side (``difference.COMPILED_FRAME``)."""
    return _run_side(*arguments)


def _run_side(
    side: _Side,
    spec: pytree.TreeSpec,
    names: list[str],
    iteration: int,
    settings: CheckSettings,
    ops: DeviceOps,
) -> tuple[Observation, list[Any]]:
    """One call of one side, observed; returns the observation and the raw outputs."""
    observation = Observation()
    observation.layouts_in = {
        name: layout_of(value) for name, value in observed_arguments(side.flat, names)
    }
    ops.manual_seed(settings.seed + iteration)
    if side.compiled and settings.backend.uses_cudagraphs:
        mark_step()
    try:
        device_type = settings.device.type if settings.device is not None else "cpu"
        with ambient(settings.grad_mode, settings.autocast, device_type):
            if side.compiled:
                result = side.fn(*pytree.tree_unflatten(side.flat, spec))
            else:
                with watching_backward() as watch:
                    result = side.fn(*pytree.tree_unflatten(side.flat, spec))
                side.own_backward = watch.freed_graph
        ops.synchronize()
    except Exception as exc:
        return _failed(observation, exc, "call"), []
    observation.returned = "None" if result is None else type(result).__name__
    flat_out, out_spec = pytree.tree_flatten(result)
    try:
        arguments = observed_arguments(side.flat, names)
        _observe_outputs(observation, flat_out, out_spec, arguments)
    except Exception as exc:  # e.g. reading a view torch has invalidated
        return _failed(observation, exc, "reading outputs"), flat_out
    roots = [
        out
        for out in flat_out
        if isinstance(out, torch.Tensor) and out.requires_grad and out.dtype.is_floating_point
    ]
    if settings.backward is True and not side.compiled:
        if not roots:
            raise ConfigurationError("backward=True, but no floating output requires grad")
        if side.own_backward:
            raise ConfigurationError(
                "backward=True, but the program runs a backward of its own, which freed "
                "its graph: use backward='auto' (the default) or backward=False"
            )
    phase = "backward"
    try:
        # A program that ran its own backward (a training step) gets none from
        # the check: its graph is freed, and the grads it made are compared.
        if roots and settings.backward is not False and not side.own_backward:
            torch.autograd.backward(torch.stack([out.sum().double() for out in roots]).sum())
            ops.synchronize()
        phase = "reading arguments"
        arguments = observed_arguments(side.flat, names)
        observation.argument_names = [name for name, _ in arguments]
        observation.arguments = [snapshot(value) for _, value in arguments]
        observation.grads = {
            name: None if value.grad is None else TensorSnapshot.of(value.grad)
            for name, value in arguments
            if isinstance(value, torch.Tensor) and value.is_leaf and value.requires_grad
        }
    except Exception as exc:
        return _failed(observation, exc, phase), flat_out
    return observation, flat_out


def _observe_outputs(
    observation: Observation,
    flat_out: list[Any],
    out_spec: pytree.TreeSpec,
    arguments: list[tuple[str, Any]],
) -> None:
    observation.output_structure = str(out_spec)
    # An output that is an argument itself is named so: its difference is a
    # different bug from one in a freshly computed output.
    by_identity = {id(value): name for name, value in arguments if isinstance(value, torch.Tensor)}
    observation.output_arguments = [by_identity.get(id(out)) for out in flat_out]
    observation.outputs = [snapshot(out) for out in flat_out]
    observation.aliasing = describe_aliasing(flat_out, arguments)


def _between_calls(
    side: _Side,
    advance: Advance | None,
    k: int,
    spec: pytree.TreeSpec,
    raw: list[Any],
    settings: CheckSettings,
    ops: DeviceOps,
) -> None:
    """What happens to one side's arguments between call ``k`` and the next, the same
    in every run of a side: the program's ``advance``, then, where a CUDA-graph
    backward leaves grads in its pool, the check's own grads dropped."""
    if advance is not None:
        side.flat = _advanced(advance, k, side.flat, spec, raw)
    if settings.backend.uses_cudagraphs and ops.grads_in_graph_pool and not side.own_backward:
        _drop_check_grads(side.flat)


def _advanced(
    advance: Advance, k: int, flat_args: list[Any], spec: pytree.TreeSpec, outputs: list[Any]
) -> list[Any]:
    current = tuple(pytree.tree_unflatten(flat_args, spec))
    following = advance(k, current, tuple(outputs))
    flat, following_spec = pytree.tree_flatten(tuple(following))
    if following_spec != spec:
        raise ConfigurationError("advance() must return arguments of the same structure")
    # What copying decided about each argument holds for those given again.
    return following_copies(flat_args, flat)


def _failed(observation: Observation, exc: Exception, phase: str) -> Observation:
    observation.error = exc
    observation.phase = phase
    observation.traceback = "".join(traceback.format_exception(exc))
    return observation


def _check_retained(
    retained: list[tuple[list[Any], list[Any]]],
    settings: CheckSettings,
    in_pool: bool,
    rounded: Sequence[dict[int, tuple[TensorSnapshot, TensorSnapshot]]] = (),
) -> tuple[Difference | None, int, int]:
    """Re-read every output kept from every iteration: the first difference, and how many
    outputs were overwritten as documented, with the error or by a later replay.

    CUDA-graph trees overwrite an earlier call's outputs (documented: clone
    what you keep). Warm-up and recording outputs then raise the documented
    error; a replay's outputs are rebuilt over the memory the next replay
    writes again, without one (pytorch/pytorch#122192): the very tensors
    (``cached_tensor_outputs``), or (``in_pool``: graphs were captured on a
    device with a graph pool) new tensors over the same storage, an output
    aliasing another output or a saved tensor, a view AOTAutograd
    regenerates. Both are the documented overwrite, counted, the second only
    where the kept output holds a later call's value of that output. Any
    other change is a stale output (a kept output whose pool memory a later
    call's intermediates reused would be one too: not seen yet), except an
    output whose difference from eager rounding explained when it was
    returned (``rounded``, per iteration): both sides unchanged since, it is
    that difference still.
    """
    overwritten = reused = 0
    for k, (eager_raw, compiled_raw) in enumerate(retained, start=1):
        for index, (expected, actual) in enumerate(zip(eager_raw, compiled_raw, strict=True)):
            if not isinstance(expected, torch.Tensor) or not isinstance(actual, torch.Tensor):
                continue
            place = Place(Role.RETAINED, index=index, iteration=k)
            try:
                now = TensorSnapshot.of(actual)
            except RuntimeError as exc:
                if OVERWRITTEN_OUTPUT_MESSAGE in str(exc):
                    overwritten += 1
                    continue
                failed = _failed(Observation(), exc, "re-read")
                crash = crash_difference(exc, failed.traceback, k, "re-read")
                return crash, overwritten, reused
            found = compare_values(
                TensorSnapshot.of(expected),
                now,
                settings.tolerance,
                Kind.STALE_OUTPUT,
                check_layout=False,
            )
            if found is None:
                continue
            if any(
                _unchanged(expected, eager_then) and _unchanged(now, compiled_then)
                for eager_then, compiled_then in _rounded_returns(
                    expected, actual, retained, rounded, k
                )
            ):
                continue
            if _returned_again(actual, retained, k, COMPILED_SIDE) and not _returned_again(
                expected, retained, k, EAGER_SIDE
            ):
                reused += 1
                continue
            if in_pool and _rebuilt_over(actual, now, retained, k, index, settings):
                reused += 1
                continue
            return found.located(k, place, kind=Kind.STALE_OUTPUT), overwritten, reused
    return None, overwritten, reused


def _rounded_returns(
    expected: torch.Tensor,
    actual: torch.Tensor,
    retained: list[tuple[list[Any], list[Any]]],
    rounded: Sequence[dict[int, tuple[TensorSnapshot, TensorSnapshot]]],
    iteration: int,
) -> list[tuple[TensorSnapshot, TensorSnapshot]]:
    """What each side held when rounding explained their difference, each time from
    ``iteration`` on that they returned these very two tensors (an argument written
    in place and returned every call is returned again, and explained again)."""
    returns = []
    for k in range(iteration, min(len(retained), len(rounded)) + 1):
        eager_raw, compiled_raw = retained[k - 1]
        for index, then in rounded[k - 1].items():
            if eager_raw[index] is expected and compiled_raw[index] is actual:
                returns.append(then)
    return returns


def _unchanged(value: torch.Tensor | TensorSnapshot, then: TensorSnapshot) -> bool:
    """Whether ``value`` still holds what ``then`` copied: its shape and every value
    (a NaN where there was one)."""
    now = value if isinstance(value, TensorSnapshot) else TensorSnapshot.of(value)
    if now.shape != then.shape or now.dtype != then.dtype:
        return False
    if now.values.is_floating_point():
        return bool(torch.allclose(now.values, then.values, rtol=0, atol=0, equal_nan=True))
    return bool(torch.equal(now.values, then.values))


#: Positions of each side's outputs in a retained pair.
EAGER_SIDE, COMPILED_SIDE = 0, 1


def _returned_again(
    tensor: torch.Tensor, retained: list[tuple[list[Any], list[Any]]], iteration: int, side: int
) -> bool:
    """Whether ``side``'s outputs of an iteration after ``iteration`` include ``tensor``
    itself, the same object."""
    return any(output is tensor for outputs in retained[iteration:] for output in outputs[side])


def _rebuilt_over(
    tensor: torch.Tensor,
    now: TensorSnapshot,
    retained: list[tuple[list[Any], list[Any]]],
    iteration: int,
    index: int,
    settings: CheckSettings,
) -> bool:
    """Whether a later compiled output occupies ``tensor``'s memory and ``tensor`` now
    holds a later call's value of its output (eager's, that call): a replay rebuilt it.

    On an H100 with torch 2.11, 54 kept outputs of a cudagraphs campaign held
    a later replay's values under new tensor objects over the same storage:
    identity alone called the documented overwrite a stale output.
    """
    span = _memory_span(tensor)
    later = retained[iteration:]
    if span is None or not any(
        isinstance(output, torch.Tensor) and _overlaps(span, _memory_span(output))
        for _, compiled_raw in later
        for output in compiled_raw
    ):
        return False
    for eager_raw, _ in later:
        value = eager_raw[index] if index < len(eager_raw) else None
        if isinstance(value, torch.Tensor) and (
            compare_values(
                TensorSnapshot.of(value),
                now,
                settings.tolerance,
                Kind.STALE_OUTPUT,
                check_layout=False,
            )
            is None
        ):
            return True
    return False


def _memory_span(tensor: torch.Tensor) -> tuple[torch.device, int, int] | None:
    """The device and byte range of ``tensor``'s storage; ``None`` where it has none (or
    it cannot be read: an invalidated output raises)."""
    try:
        storage = tensor.untyped_storage()
        start = storage.data_ptr()
        size = storage.nbytes()
    except (RuntimeError, NotImplementedError):
        return None
    return (tensor.device, start, start + size) if start and size else None


def _overlaps(
    span: tuple[torch.device, int, int], other: tuple[torch.device, int, int] | None
) -> bool:
    return other is not None and span[0] == other[0] and span[1] < other[2] and other[1] < span[2]


def _drop_check_grads(flat: Sequence[Any]) -> None:
    """Set ``.grad`` to ``None`` on the leaves among (and inside) the arguments.

    On CUDA a CUDA-graph backend's backward leaves a leaf's first ``.grad``
    in its graph pool; the next call's generation invalidates it, and a
    backward accumulating into it raises (pytorch/pytorch#169545; torch
    2.13's message: "set .grad to None before each backward"). The check's
    own backward is the check's, not the program's, so its grads follow that
    documented usage on both sides, as ``optimizer.zero_grad()`` leaves them:
    each iteration's are compared and none accumulates across calls. A
    program that runs a backward of its own keeps its grads as it wrote them.
    """
    for value in flat:
        tensors = value.parameters() if isinstance(value, torch.nn.Module) else (value,)
        for tensor in tensors:
            if isinstance(tensor, torch.Tensor) and tensor.is_leaf and tensor.grad is not None:
                tensor.grad = None


def argument_names(fn: Callable[..., Any], args: tuple[Any, ...]) -> list[str]:
    """Readable names of the flat arguments: ``x``, ``pair[1]``, ``args[3]``."""
    try:
        parameters = [
            p.name
            for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):
        parameters = []
    names: list[str] = []
    for index, value in enumerate(args):
        top = parameters[index] if index < len(parameters) else f"args[{index}]"
        paths, _ = pytree.tree_flatten_with_path(value)
        names.extend(top + pytree.keystr(path) for path, _ in paths)
    return names


def _context(settings: CheckSettings, device: torch.device | None) -> str:
    return f"(backend {settings.backend.name}, device {device}, {settings.iters} iterations)"


def _device_of(flat: Sequence[Any]) -> torch.device:
    for leaf in flat:
        if isinstance(leaf, torch.Tensor):
            return leaf.device
    return torch.device("cpu")
