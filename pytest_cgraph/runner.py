"""Run one program eagerly and compiled for N iterations, and judge every iteration.

This is the oracle of DESIGN.md §4. Per iteration both sides start from
identical arguments and the same RNG seed (a new seed each iteration, so a
random stream frozen at record time shows); after the call everything
observable is snapshotted at once, because a CUDA-graph replay overwrites
its outputs in place. After the last iteration the raw outputs kept from
every iteration are read again: each must still equal eager's or raise the
documented "overwritten by a subsequent run" error.
"""

from __future__ import annotations

import contextlib
import inspect
import linecache
import traceback
import warnings
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Literal

import torch
import torch.utils._pytree as pytree

from pytest_cgraph.backends import (
    OVERWRITTEN_OUTPUT_MESSAGE,
    Backend,
    DeviceOps,
    captured_graph_count,
    collect_compile_evidence,
    device_ops_for,
    mark_step,
    reset_compiler_state,
    resolve_backend,
    resolve_device,
    without_guard_profiling,
)
from pytest_cgraph.cloning import clone_preserving_aliases
from pytest_cgraph.compare import (
    CRASH,
    STALE_OUTPUT,
    Difference,
    Tolerance,
    compare_iteration,
    compare_values,
    crash_detail,
)
from pytest_cgraph.errors import ConfigurationError, EquivalenceError, InvalidProgram
from pytest_cgraph.observe import Observation, TensorSnapshot, describe_aliasing, snapshot

BackwardPolicy = Literal["auto"] | bool
FreshArgs = Callable[[int], Sequence[Any]]
#: ``advance(k, args, outputs)``: the arguments of call k+1 from call k's, per side.
Advance = Callable[[int, tuple[Any, ...], tuple[Any, ...]], Sequence[Any]]


@dataclass(frozen=True)
class CheckSettings:
    """How one check runs; built by :func:`check_equivalent` from its keywords.

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

    def summary(self) -> str:
        """One line for a terminal."""
        reasons = ", ".join(f"{reason} x{count}" for reason, count in self.skip_reasons.items())
        skipped = f"{self.graphs_skipped} skipped" + (f" ({reasons})" if reasons else "")
        return (
            f"{self.iterations} iterations on {self.device} with {self.backend}: "
            f"{self.compiles} graph(s) compiled, {self.graphs_captured} captured, {skipped}"
        )


def check_equivalent(
    fn: Callable[..., Any],
    /,
    *args: Any,
    iters: int = 5,
    backend: str | Callable[..., Any] | Backend = "cudagraphs",
    device: str | torch.device | None = None,
    fresh_args: FreshArgs | None = None,
    backward: BackwardPolicy = "auto",
    rtol: float | None = None,
    atol: float | None = None,
    seed: int = 0,
    compiled_autograd: bool = False,
) -> CheckReport:
    """Run ``fn`` eagerly and compiled ``iters`` times; raise at the first difference.

    Args:
        fn: the program. Its tensor arguments are cloned for each side, so the
            caller's tensors are never touched.
        *args: arguments reused across iterations (mutations accumulate, as
            in a training loop), unless ``fresh_args`` is given.
        iters: calls per side; 4 or more let CUDA-graph trees replay twice
            (call 1 warms up, call 2 records, 3.. replay).
        backend: a ``torch.compile`` backend name, ``reduce-overhead`` or
            ``max-autotune``, ``package.module:attr``, or a compiler callable.
        device: move tensor arguments to this device (``auto``, ``cpu``,
            ``cuda``, ``cuda:N``); ``None`` leaves them where they are.
        fresh_args: ``fresh_args(k)`` returns iteration ``k``'s arguments
            (k from 1): fresh tensors, changing host scalars, changing shapes.
        backward: ``"auto"`` backpropagates the sum of outputs whenever a
            floating output requires grad; ``True`` insists; ``False`` never.
        rtol, atol: tolerances for floating values; default per dtype as in
            ``torch.testing.assert_close``.
        seed: base of the per-iteration RNG seeds (iteration k uses seed + k).
        compiled_autograd: run the compiled side's backward under compiled
            autograd (traced by the autograd engine, compiled with ``backend``).

    Returns:
        A :class:`CheckReport` of what ran.

    Raises:
        EquivalenceError: the first observable difference.
        InvalidProgram: eager itself raised; there is nothing to compare.
        ConfigurationError: a bad backend, device or argument, in one line.
    """
    if args and fresh_args is not None:
        raise ConfigurationError("pass the arguments or fresh_args, not both")
    if isinstance(iters, bool) or not isinstance(iters, int) or iters < 1:
        raise ConfigurationError(f"iters must be a positive integer, got {iters!r}")
    if backward not in ("auto", True, False):
        raise ConfigurationError(f"backward must be 'auto', True or False, got {backward!r}")
    resolved_device = resolve_device(device)
    settings = CheckSettings(
        backend=resolve_backend(backend),
        iters=iters,
        device=resolved_device,
        backward=backward,
        tolerance=Tolerance(rtol, atol),
        seed=seed,
        compiled_autograd=compiled_autograd,
    )
    return run_check(fn, args, fresh_args, settings)


def run_check(
    fn: Callable[..., Any],
    args: Sequence[Any],
    fresh_args: FreshArgs | None,
    settings: CheckSettings,
    advance: Advance | None = None,
) -> CheckReport:
    """The iteration loop behind :func:`check_equivalent`.

    ``advance``, when given, derives each side's next arguments from its own
    arguments and outputs (parameter updates, outputs fed back); it runs the
    same code on both sides, so the sides stay comparable.

    Warnings are recorded and dropped: torch's compile-time notices must not
    reach the user's terminal, nor turn into exceptions (and so into false
    crashes) under ``-W error``.
    """
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        return _iterate(fn, args, fresh_args, settings, advance)


def _iterate(
    fn: Callable[..., Any],
    args: Sequence[Any],
    fresh_args: FreshArgs | None,
    settings: CheckSettings,
    advance: Advance | None,
) -> CheckReport:
    reset_compiler_state()
    compiled_fn = settings.backend.compile(fn)
    retained: list[tuple[list[Any], list[Any]]] = []
    device = settings.device
    ops = settings.ops
    overwritten = 0
    tensor_outputs = 0
    try:
        with (
            collect_compile_evidence() as evidence,
            _comparable_inductor(),
            without_guard_profiling(),
        ):
            sides: tuple[list[Any], list[Any]] | None = None
            for k in range(1, settings.iters + 1):
                if fresh_args is not None or sides is None:
                    base = tuple(fresh_args(k)) if fresh_args is not None else tuple(args)
                    flat, spec = pytree.tree_flatten(base)
                    names = _argument_names(fn, base)
                    device = device or _device_of(flat)
                    ops = ops or device_ops_for(device)
                    sides = (
                        clone_preserving_aliases(flat, settings.device),
                        clone_preserving_aliases(flat, settings.device),
                    )
                eager, eager_raw = _run_side(fn, sides[0], spec, names, k, settings, ops, False)
                if eager.error is not None:
                    raise InvalidProgram(k, eager.phase, eager.error)
                if k == 1:
                    tensor_outputs = sum(isinstance(o, TensorSnapshot) for o in eager.outputs)
                with _autograd_engine(settings):
                    compiled, compiled_raw = _run_side(
                        compiled_fn, sides[1], spec, names, k, settings, ops, True
                    )
                difference = compare_iteration(eager, compiled, k, settings.tolerance)
                if difference is not None:
                    raise EquivalenceError(difference, _context(settings, device))
                retained.append((eager_raw, compiled_raw))
                if advance is not None and k < settings.iters:
                    sides = (
                        _advanced(advance, k, sides[0], spec, eager_raw),
                        _advanced(advance, k, sides[1], spec, compiled_raw),
                    )
            assert ops is not None
            ops.synchronize()
            difference, overwritten = _check_retained(retained, settings)
            if difference is not None:
                raise EquivalenceError(difference, _context(settings, device))
            captured = captured_graph_count(settings.backend)
    finally:
        retained.clear()
        reset_compiler_state()
    return CheckReport(
        iterations=settings.iters,
        backend=settings.backend.name,
        device=str(device),
        compiles=evidence.compiles,
        graphs_captured=captured,
        graphs_skipped=evidence.skips,
        skip_reasons=dict(evidence.skip_reasons),
        outputs_overwritten=overwritten,
        tensor_outputs=tensor_outputs,
    )


def _run_side(
    fn: Callable[..., Any],
    flat_args: list[Any],
    spec: pytree.TreeSpec,
    names: list[str],
    iteration: int,
    settings: CheckSettings,
    ops: DeviceOps,
    compiled: bool,
) -> tuple[Observation, list[Any]]:
    """One call of one side, observed; returns the observation and the raw outputs."""
    observation = Observation(argument_names=names)
    ops.manual_seed(settings.seed + iteration)
    if compiled and settings.backend.uses_cudagraphs:
        mark_step()
    try:
        result = fn(*pytree.tree_unflatten(flat_args, spec))
        ops.synchronize()
    except Exception as exc:
        return _failed(observation, exc, "call"), []
    flat_out, out_spec = pytree.tree_flatten(result)
    try:
        _observe_outputs(observation, flat_out, out_spec, flat_args, names)
    except Exception as exc:  # e.g. reading a view torch has invalidated
        return _failed(observation, exc, "reading outputs"), flat_out
    roots = [
        out
        for out in flat_out
        if isinstance(out, torch.Tensor) and out.requires_grad and out.dtype.is_floating_point
    ]
    if settings.backward is True and not roots and not compiled:
        raise ConfigurationError("backward=True, but no floating output requires grad")
    try:
        if roots and settings.backward is not False:
            phase = "backward"
            torch.autograd.backward(torch.stack([out.sum().double() for out in roots]).sum())
            ops.synchronize()
        phase = "reading arguments"
        observation.arguments = [snapshot(arg) for arg in flat_args]
        observation.grads = {
            name: None if arg.grad is None else TensorSnapshot.of(arg.grad)
            for name, arg in zip(names, flat_args, strict=True)
            if isinstance(arg, torch.Tensor) and arg.is_leaf and arg.requires_grad
        }
    except Exception as exc:
        return _failed(observation, exc, phase), flat_out
    return observation, flat_out


def _observe_outputs(
    observation: Observation,
    flat_out: list[Any],
    out_spec: pytree.TreeSpec,
    flat_args: list[Any],
    names: list[str],
) -> None:
    observation.output_structure = str(out_spec)
    # An output that is an argument itself is named so: its difference is a
    # different bug from one in a freshly computed output.
    by_identity = {
        id(arg): name
        for arg, name in zip(flat_args, names, strict=True)
        if isinstance(arg, torch.Tensor)
    }
    observation.output_names = [
        f"output #{i}" + (f" (argument {by_identity[id(out)]})" if id(out) in by_identity else "")
        for i, out in enumerate(flat_out)
    ]
    observation.outputs = [snapshot(out) for out in flat_out]
    observation.aliasing = describe_aliasing(flat_out, flat_args, names)


def _advanced(
    advance: Advance, k: int, flat_args: list[Any], spec: pytree.TreeSpec, outputs: list[Any]
) -> list[Any]:
    current = tuple(pytree.tree_unflatten(flat_args, spec))
    following = advance(k, current, tuple(outputs))
    flat, following_spec = pytree.tree_flatten(tuple(following))
    if following_spec != spec:
        raise ConfigurationError("advance() must return arguments of the same structure")
    return flat


def check_source(
    source: str,
    *,
    backend: str | Callable[..., Any] | Backend = "cudagraphs",
    device: str | torch.device | None = None,
    iters: int | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    seed: int = 0,
    filename: str = "<cgraph program>",
) -> CheckReport:
    """Check a rendered program: the source defines ``program`` and ``inputs(k)``.

    Optional names in the source: ``advance(k, args, outputs)``, ``FRESH_INPUTS``
    (call ``inputs(k)`` every iteration instead of reusing ``inputs(1)``),
    ``ITERS``, ``COMPILED_AUTOGRAD``, ``RTOL`` and ``ATOL`` (used when the
    call gives none). The source is the only thing executed, so what is
    checked is exactly what a repro file holds.
    """
    namespace = load_source(source, filename)
    iters = iters if iters is not None else int(namespace.get("ITERS", 5))
    rtol = rtol if rtol is not None else namespace.get("RTOL")
    atol = atol if atol is not None else namespace.get("ATOL")
    resolved_device = resolve_device(device)
    settings = CheckSettings(
        backend=resolve_backend(backend),
        iters=iters,
        device=resolved_device,
        tolerance=Tolerance(rtol, atol),
        seed=seed,
        compiled_autograd=bool(namespace.get("COMPILED_AUTOGRAD", False)),
    )
    inputs = namespace["inputs"]
    fresh = bool(namespace.get("FRESH_INPUTS", False))
    args = () if fresh else tuple(inputs(1))
    return run_check(
        namespace["program"], args, inputs if fresh else None, settings, namespace.get("advance")
    )


def load_source(source: str, filename: str) -> dict[str, Any]:
    """Execute a program's source; register it so tracebacks show its lines."""
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict[str, Any] = {"__name__": "cgraph_program"}
    exec(compile(source, filename, "exec"), namespace)
    return namespace


def _failed(observation: Observation, exc: Exception, phase: str) -> Observation:
    observation.error = exc
    observation.phase = phase
    observation.traceback = "".join(traceback.format_exception(exc))
    return observation


def _check_retained(
    retained: list[tuple[list[Any], list[Any]]], settings: CheckSettings
) -> tuple[Difference | None, int]:
    """Re-read every output kept from every iteration; count documented overwrites."""
    overwritten = 0
    last = len(retained)
    for k, (eager_raw, compiled_raw) in enumerate(retained, start=1):
        for index, (expected, actual) in enumerate(zip(eager_raw, compiled_raw, strict=True)):
            if not isinstance(expected, torch.Tensor) or not isinstance(actual, torch.Tensor):
                continue
            place = f"output #{index} of iteration {k}, re-read after iteration {last}"
            try:
                now = TensorSnapshot.of(actual)
            except RuntimeError as exc:
                if OVERWRITTEN_OUTPUT_MESSAGE in str(exc):
                    overwritten += 1
                    continue
                failed = _failed(Observation(), exc, "re-read")
                detail = crash_detail(exc, failed.traceback)
                return Difference(
                    CRASH, k, place, detail, exception_type=type(exc).__name__
                ), overwritten
            found = compare_values(
                TensorSnapshot.of(expected),
                now,
                settings.tolerance,
                STALE_OUTPUT,
                check_layout=False,
            )
            if found is not None:
                return found.located(k, place, kind=STALE_OUTPUT), overwritten
    return None, overwritten


def _autograd_engine(settings: CheckSettings) -> AbstractContextManager[Any]:
    """Compiled autograd around the compiled side's call and backward, when asked for.

    The backward graph is then traced by the autograd engine and compiled
    with the same backend, instead of AOTAutograd's local backward alone.
    """
    if not settings.compiled_autograd:
        return contextlib.nullcontext()
    from torch._dynamo import compiled_autograd

    return compiled_autograd._enable(settings.backend.compile)


def _comparable_inductor() -> AbstractContextManager[Any]:
    """Inductor settings that make its results comparable with eager (DESIGN.md §4).

    ``fallback_random`` draws random numbers with eager's kernels, and
    ``emulate_precision_casts`` rounds low-precision intermediates as eager does.
    """
    import torch._inductor.config as inductor_config

    return inductor_config.patch(fallback_random=True, emulate_precision_casts=True)


def _argument_names(fn: Callable[..., Any], args: tuple[Any, ...]) -> list[str]:
    """Readable names of the flat arguments: ``x``, ``pair[1]``, ``args[3]``."""
    try:
        parameters = [
            p.name
            for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):
        parameters = []
    names = []
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
