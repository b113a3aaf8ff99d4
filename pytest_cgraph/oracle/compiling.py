"""How the compiled side is compiled, and everything that differs between CUDA and CPU.

Everything device-specific is reached through here (``DeviceOps``,
``mark_step``, ``captured_graph_count``), so the engine stays
device-agnostic and the CUDA-only paths can be driven on CPU by test
doubles. So are the settings under which both sides run: Inductor's
comparable randomness and precision, and the telemetry torch would
otherwise pay for on every compile.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import importlib
import logging
import re
import types
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch

#: Inductor modes accepted as backend names; ``torch.compile(mode=...)`` selects them.
INDUCTOR_MODES = ("reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")

#: Backend names whose compiled code goes through CUDA-graph trees on CUDA.
CUDAGRAPH_BACKENDS = frozenset({"cudagraphs", "reduce-overhead", "max-autotune"})

#: Backend names built on Inductor: their ladder has an ``inductor`` rung.
INDUCTOR_BACKENDS = frozenset({"inductor", *INDUCTOR_MODES})


@dataclass(frozen=True)
class Backend:
    """One way of compiling the program under test.

    ``compiler`` is what ``torch.compile(backend=...)`` receives; ``mode`` is
    set instead for Inductor modes such as ``reduce-overhead``.
    """

    name: str
    compiler: str | Callable[..., Any]
    mode: str | None = None
    uses_cudagraphs: bool = False

    def compile(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """Wrap ``fn`` for compilation; compiling itself happens on the first call."""
        if self.mode is not None:
            return torch.compile(fn, mode=self.mode)
        return torch.compile(fn, backend=self.compiler)

    @classmethod
    def named(cls, spec: str) -> Backend:
        """The backend a name stands for: an Inductor mode, ``package.module:attr``,
        or a registered backend name (``torch.compile`` itself rejects an unknown one)."""
        if spec in INDUCTOR_MODES:
            return cls(spec, "inductor", mode=spec, uses_cudagraphs=spec in CUDAGRAPH_BACKENDS)
        if ":" in spec:
            module_name, _, attr = spec.partition(":")
            compiler = getattr(importlib.import_module(module_name), attr)
            return cls(
                spec, compiler, uses_cudagraphs=bool(getattr(compiler, "uses_cudagraphs", 0))
            )
        return cls(spec, spec, uses_cudagraphs=spec in CUDAGRAPH_BACKENDS)


class DeviceOps(Protocol):
    """What the engine must do differently on a device with asynchronous kernels."""

    def synchronize(self) -> None:
        """Wait for queued kernels so that values read next are final."""

    def manual_seed(self, seed: int) -> None:
        """Seed every random stream the program may draw from."""

    @property
    def grads_in_graph_pool(self) -> bool:
        """Whether a CUDA-graph backend's backward leaves ``.grad`` in its graph pool."""


class CpuOps:
    """CPU kernels are synchronous; seeding torch's default generator suffices."""

    #: Nothing is captured on CPU: a grad is memory of its own.
    grads_in_graph_pool = False

    def synchronize(self) -> None:
        """Nothing is queued on CPU."""

    def manual_seed(self, seed: int) -> None:
        """Seed every generator ``torch.manual_seed`` seeds: where only the CPU has one, directly.

        A program checked on CPU may still draw on another device, so where
        one exists every generator is seeded. Where none does,
        ``torch.manual_seed`` still queues a lazy seed for CUDA, XPU and
        MTIA, each with a formatted stack of the caller: ~1 ms a call
        under pytest and Hypothesis, twice per iteration. Seeding the one
        generator there is is the same state, at a hundredth of the cost.
        """
        if only_cpu_generators():
            torch.default_generator.manual_seed(seed)
        else:
            torch.manual_seed(seed)


@functools.cache
def only_cpu_generators() -> bool:
    """Whether this process has no device with a generator but the CPU.

    Asked once (device counts do not change in a process); asking does not
    initialise any device.
    """
    accelerators = (torch.cuda, torch.xpu, torch.mps, torch.mtia)
    if any(module.is_available() for module in accelerators):
        return False
    custom = torch._C._get_privateuse1_backend_name()
    return custom == "privateuseone" or not hasattr(torch, custom)


@dataclass
class CudaOps:
    """Synchronise before reading, and seed the CUDA generators explicitly."""

    device: torch.device
    #: A leaf's first ``.grad`` is the captured backward's output, in the
    #: trees' pool, invalidated by the next call's generation (see the engine).
    grads_in_graph_pool = True

    def synchronize(self) -> None:
        """Block until ``device`` has finished everything queued."""
        torch.cuda.synchronize(self.device)

    def manual_seed(self, seed: int) -> None:
        """Seed CPU and every CUDA generator: a program may draw on either."""
        torch.manual_seed(seed)
        torch.cuda.manual_seed_all(seed)


def device_ops_for(device: torch.device | None) -> DeviceOps:
    """Pick the device handling for a run on ``device``."""
    if device is not None and device.type == "cuda":
        return CudaOps(device)
    return CpuOps()


def mark_step() -> None:
    """Tell CUDA-graph trees that a new iteration starts (harmless without CUDA)."""
    torch.compiler.cudagraph_mark_step_begin()


def reset_compiler_state() -> None:
    """Forget compiled code and CUDA-graph trees, so checks do not leak into each other.

    ``torch._dynamo.reset`` resets the trees only when CUDA is available; the
    explicit call keeps the step counter of CPU-side doubles fresh too.
    """
    from torch._inductor.cudagraph_trees import reset_cudagraph_trees

    torch._dynamo.reset()
    reset_cudagraph_trees()


def captured_graph_count(backend: Backend) -> int:
    """Graphs really captured so far by ``backend``, from the trees' own records.

    Only CUDA-graph trees are asked; nothing a backend says of itself counts.
    """
    if not backend.uses_cudagraphs or not torch.cuda.is_available():
        return 0
    from torch._inductor import cudagraph_trees

    if not torch._C._is_key_in_tls("tree_manager_containers"):
        return 0
    containers = cudagraph_trees.get_obj(cudagraph_trees.local, "tree_manager_containers")
    count = 0
    for container in containers.values():
        manager = container.tree_manager
        if manager is None or manager.roots is None:
            continue
        pending = [node for nodes in manager.roots.values() for node in nodes]
        while pending:
            node = pending.pop()
            count += 1
            pending.extend(child for kids in node.children.values() for child in kids)
    return count


@dataclass
class CompileEvidence:
    """What torch itself said about compiling: graphs compiled, CUDA-graph skips."""

    compiles: int = 0
    skips: int = 0
    skip_reasons: Counter[str] = field(default_factory=Counter)


def skip_reason(message: str) -> str:
    """Reduce torch's skip message to a reason worth grouping by.

    ``"skipping cudagraphs due to skipping cudagraphs due to cpu device
    (primals_1). Found from : ..."`` becomes ``"cpu device"``.
    """
    first = message.strip().splitlines()[0] if message.strip() else "unknown"
    first = first.split(". Found from")[0]
    while first.startswith("skipping cudagraphs due to "):
        first = first[len("skipping cudagraphs due to ") :]
    first = re.sub(r"\s*\([^)]*\)\s*$", "", first).strip().rstrip(".:")
    return first or "unknown"


def drop_idle_trace_handler() -> None:
    """Remove torch's structured-trace handler when it has nowhere to write.

    While ``torch.__trace`` has a handler, every compile builds its
    structured-trace records (stacks, metadata, payloads): about a tenth of
    a small program's compile. Without ``TORCH_TRACE``, torch's own
    ``LazyTraceHandler`` removes itself at its first record; this does the
    same up front. A handler with a trace directory (``TORCH_TRACE`` set) is
    kept: whoever set it wants the trace.
    """
    trace_log = logging.getLogger("torch.__trace")
    for handler in list(trace_log.handlers):
        if (
            type(handler).__name__ == "LazyTraceHandler"
            and getattr(handler, "root_dir", "") is None
            and getattr(handler, "stream", "") is None
        ):
            trace_log.removeHandler(handler)


@contextmanager
def without_captured_trace() -> Iterator[None]:
    """Detach pytest's log-capture handlers from torch's structured trace while the block runs.

    pytest attaches its capture handlers to every logger that does not
    propagate, ``torch.__trace`` among them. A handler there, any handler,
    makes every compile build its structured-trace records (stacks, JSON
    metadata and payloads, for ``tlparse``) and hand them to pytest, which
    keeps them in memory until the test ends: a third more time per compile
    of a small program, and records no test report shows usefully. torch's
    own handler (``TORCH_TRACE``) is kept; pytest's are back when the block ends.
    """
    trace_log = logging.getLogger("torch.__trace")
    detached = [
        handler
        for handler in trace_log.handlers
        if type(handler).__module__.partition(".")[0] == "_pytest"
    ]
    for handler in detached:
        trace_log.removeHandler(handler)
    try:
        yield
    finally:
        for handler in detached:
            trace_log.addHandler(handler)


@contextmanager
def without_guard_profiling() -> Iterator[None]:
    """Skip Dynamo's guard-latency measurement while the block compiles.

    After building a frame's guards, Dynamo flushes the cache and times one
    evaluation of them (``profile_guard_manager``), for a metric only: about
    18 ms per compiled frame on these machines, an eighth of a small
    program's check. The guards themselves, and their check on the frame
    that created them, are untouched.
    """
    from torch._dynamo import guards

    original = getattr(guards, "profile_guard_manager", None)
    if original is None:
        yield
        return
    setattr(guards, "profile_guard_manager", lambda *args, **kwargs: 0.0)  # noqa: B010
    try:
        yield
    finally:
        setattr(guards, "profile_guard_manager", original)  # noqa: B010


class _SkipCollector(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.reasons: Counter[str] = Counter()

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "skipping cudagraphs" in message:
            self.reasons[skip_reason(message)] += 1


@contextmanager
def collect_compile_evidence() -> Iterator[CompileEvidence]:
    """Count compiles and CUDA-graph skips while the block runs.

    Skip messages are taken from torch's ``cudagraphs`` log and kept from the
    user's terminal: they are reported in the check's summary instead.
    """
    from torch._dynamo.utils import counters
    from torch._inductor.cudagraph_utils import cudagraphs_log

    evidence = CompileEvidence()
    graphs_before = counters["stats"]["unique_graphs"]
    skips_before = counters["inductor"]["cudagraph_skips"]
    collector = _SkipCollector()
    propagate = cudagraphs_log.propagate
    cudagraphs_log.addHandler(collector)
    cudagraphs_log.propagate = False
    drop_idle_trace_handler()
    try:
        yield evidence
    finally:
        cudagraphs_log.removeHandler(collector)
        cudagraphs_log.propagate = propagate
        evidence.compiles = counters["stats"]["unique_graphs"] - graphs_before
        evidence.skips = counters["inductor"]["cudagraph_skips"] - skips_before
        evidence.skip_reasons = collector.reasons
        unexplained = evidence.skips - sum(collector.reasons.values())
        if unexplained > 0:
            evidence.skip_reasons["reason not logged"] += unexplained


#: Inductor settings under which its results are comparable with eager's:
#: random numbers drawn with eager's kernels, low-precision intermediates
#: rounded as eager rounds them.
COMPARABLE_INDUCTOR = {"fallback_random": True, "emulate_precision_casts": True}


def comparable_inductor() -> AbstractContextManager[Any]:
    """Inductor's config patched to :data:`COMPARABLE_INDUCTOR` while the block runs."""
    import torch._inductor.config as inductor_config

    patched: AbstractContextManager[Any] = inductor_config.patch(COMPARABLE_INDUCTOR)
    return patched


@contextmanager
def compile_config(settings: Iterable[tuple[str, Any]]) -> Iterator[None]:
    """A program's compile settings (the protocol's ``COMPILE_CONFIG``) in force while
    the block runs, each put back as it was afterwards: the process checks other
    programs under torch's defaults.

    Settings are patched through each config module's own ``patch``, so a name
    torch renames fails here, not by silently setting an attribute nobody reads.
    """
    with contextlib.ExitStack() as stack:
        for name, value in settings:
            module_name, _, key = name.rpartition(".")
            stack.enter_context(importlib.import_module(module_name).patch({key: value}))
        yield


def compiled_autograd_engine(backend: Backend, enabled: bool) -> AbstractContextManager[Any]:
    """Compiled autograd around the compiled side's call and backward, when asked for.

    The backward graph is then traced by the autograd engine and compiled
    with the same backend, instead of AOTAutograd's local backward alone.
    """
    if not enabled:
        return contextlib.nullcontext()
    from torch._dynamo import compiled_autograd

    return compiled_autograd._enable(backend.compile)


@contextmanager
def compile_context_left_as_found() -> Iterator[None]:
    """Close, on the way out, any compile context the block entered and left open.

    Compiled autograd enters its capture's ``CompileContext`` by hand and
    leaves it only when the capture succeeds. When the capture raises (a
    refusal such as "higher order gradients"), that context stays current,
    and its suspended generator is closed whenever the garbage collector
    reaches it, putting back the context it saw on entry: ``None``. Landing in
    the middle of a later compile, that close makes Dynamo fail with
    "compile_context is not set", a crash that would be blamed on whichever
    program was compiling then. Closing the generator here keeps each
    check's compile state its own.
    """
    from torch import _guards

    found = _guards.CompileContext.try_get()
    try:
        yield
    finally:
        if _guards.CompileContext.try_get() is not found:
            _close_compile_contexts_down_to(found)


def _close_compile_contexts_down_to(found: Any) -> None:
    """Close the open ``compile_context`` generators above ``found``, innermost first.

    Each close runs the generator's ``finally``, which restores the context
    it replaced; a context no generator holds any more is put back by hand.
    """
    from torch import _guards

    code = _guards.compile_context.__wrapped__.__code__  # type: ignore[attr-defined]
    open_by_context: dict[int, types.GeneratorType[Any, Any, Any]] = {}
    for candidate in gc.get_objects():
        if type(candidate) is types.GeneratorType and candidate.gi_code is code:
            frame = candidate.gi_frame
            if frame is not None and "context" in frame.f_locals:
                open_by_context[id(frame.f_locals["context"])] = candidate
    while (current := _guards.CompileContext.try_get()) is not found:
        generator = open_by_context.pop(id(current), None)
        if generator is None:
            _guards._TLS.compile_context = found
            return
        generator.close()


@contextmanager
def saved_tensors_hooks_left_as_found() -> Iterator[None]:
    """Enable saved-tensor hooks again on the way out if the block left them disabled.

    torch.func.grad disables them while it runs (``doesnt_support_saved_tensors_hooks``);
    Dynamo tracing it applies that for real, and a compile that fails inside
    never enables them again. Every later program in the process that uses
    activation checkpointing then fails in eager ("torch.func.{grad, vjp,
    jacrev, hessian} don't yet support saved tensor hooks"), and would be set
    aside as invalid.
    """
    from torch._C import _autograd

    # Bound by torch's C extension but missing from its type stubs (2.13, 2.14).
    is_enabled: Callable[[], bool] = _autograd._saved_tensors_hooks_is_enabled  # type: ignore[attr-defined]
    enabled = is_enabled()
    try:
        yield
    finally:
        if enabled and not is_enabled():
            _autograd._saved_tensors_hooks_enable()


@contextlib.contextmanager
def ambient(grad_mode_name: str, autocast: str | None, device_type: str) -> Iterator[None]:
    """What each call of a program runs under: its grad mode (``GRAD_MODE``) and, when
    ``autocast`` names a dtype (``AUTOCAST``), an autocast of it on ``device_type``.

    Mixed precision is how models train: Dynamo guards on the autocast state
    it finds and AOTAutograd traces under it, while eager decides per op at
    run time; a region of the program that sets autocast otherwise (turns it
    off for a precise matmul) is where the two may part.
    """
    with grad_mode(grad_mode_name):
        if autocast is None:
            yield
            return
        with torch.autocast(device_type, dtype=getattr(torch, autocast)):
            yield


def device_type_of(values: Iterable[Any]) -> str:
    """The device type of the first tensor among ``values`` (``"cpu"`` with none): where
    an ambient autocast applies to a run over them."""
    return next((v.device.type for v in values if isinstance(v, torch.Tensor)), "cpu")


def grad_mode(name: str) -> AbstractContextManager[Any]:
    """The ambient grad mode a program's calls run under (the protocol's ``GRAD_MODE``)."""
    if name == "no_grad":
        return torch.no_grad()
    if name == "inference_mode":
        return torch.inference_mode()
    # The caller's own mode, set again so that it is restored on the way out:
    # a program that switches grad off (torch.set_grad_enabled(False)) and
    # raises before switching it back must not leave the process without
    # grad for every later check.
    return torch.set_grad_enabled(torch.is_grad_enabled())
