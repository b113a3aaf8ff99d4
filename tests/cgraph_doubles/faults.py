"""Fault-injection backends: each breaks one rule of CUDA-graph replay, from call 3 on.

Each is registered with Dynamo under ``faulty_<name>`` when this module is
imported (so ``pytest -p cgraph_doubles.faults --cgraph-backend faulty_...``
works), and listed in ``FAULTS`` with the failure kind it must produce.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch._dynamo.backends.common import aot_autograd
from torch._dynamo.backends.registry import register_backend
from torch._functorch.aot_autograd import make_boxed_func

from cgraph_doubles.replay import RECORD, ReplayBackend, as_tuple


def _shares_storage(tensor: Any, others: Sequence[Any]) -> bool:
    return isinstance(tensor, torch.Tensor) and any(
        isinstance(o, torch.Tensor)
        and o.untyped_storage().nbytes() > 0
        and o.untyped_storage().data_ptr() == tensor.untyped_storage().data_ptr()
        for o in others
    )


def overwrite_outputs(n: int, run: Callable[..., Any], args: Sequence[Any], state: dict) -> Any:
    """Replays write into one static output pool and hand out new tensors over it:
    earlier outputs change silently under tensors of their own. (Handing out the
    very same tensors again is what real CUDA-graph trees do, and documented.)"""
    outputs = as_tuple(run(*args))
    if n <= RECORD:
        return outputs
    pool = state.setdefault("pool", [o.detach().clone() for o in outputs])
    for buffer, out in zip(pool, outputs, strict=True):
        buffer.copy_(out)
    return tuple(buffer.view_as(buffer) for buffer in pool)


def stale_inputs(n: int, run: Callable[..., Any], args: Sequence[Any], state: dict) -> Any:
    """Replays read the tensors seen at record time instead of copying new inputs in."""
    if n == RECORD:
        state["recorded"] = [a.detach().clone() if isinstance(a, torch.Tensor) else a for a in args]
    return run(*(state["recorded"] if n > RECORD else args))


def lost_input_mutation(n: int, run: Callable[..., Any], args: Sequence[Any], state: dict) -> Any:
    """Replays mutate private copies of the inputs; the caller's tensors are never written.

    That includes the tensors a graph holds as attributes (a module's
    parameters in an optimizer step's graph), which CUDA-graph trees take
    as static inputs.
    """
    if n <= RECORD:
        return run(*args)
    with _private_attributes(state["graph"]):
        return run(*(a.clone() if isinstance(a, torch.Tensor) else a for a in args))


@contextlib.contextmanager
def _private_attributes(graph: torch.fx.GraphModule) -> Iterator[None]:
    """Swap the tensors ``graph`` reads through ``get_attr`` for copies while inside."""
    held = {
        node.target: getattr(graph, node.target)
        for node in graph.graph.nodes
        if node.op == "get_attr" and isinstance(getattr(graph, node.target, None), torch.Tensor)
    }
    for name, tensor in held.items():
        copy = tensor.detach().clone()
        if isinstance(tensor, torch.nn.Parameter):
            copy = torch.nn.Parameter(copy, requires_grad=tensor.requires_grad)
        setattr(graph, name, copy)
    try:
        yield
    finally:
        for name, tensor in held.items():
            setattr(graph, name, tensor)


def lost_view_write(n: int, run: Callable[..., Any], args: Sequence[Any], state: dict) -> Any:
    """Replays write through private copies of inputs that are views: the base never sees it."""
    if n <= RECORD:
        return run(*args)
    return run(*(a.clone() if isinstance(a, torch.Tensor) and a._is_view() else a for a in args))


def frozen_rng(n: int, run: Callable[..., Any], args: Sequence[Any], state: dict) -> Any:
    """Replays restart the random stream where it stood at record time."""
    if n == RECORD:
        state["rng"] = torch.get_rng_state()
    if n > RECORD:
        torch.set_rng_state(state["rng"])
    return run(*args)


def baked_host_scalar(n: int, run: Callable[..., Any], args: Sequence[Any], state: dict) -> Any:
    """Replays use the value a 0-dim CPU tensor had at record time."""

    def host_scalar(a: Any) -> bool:
        return isinstance(a, torch.Tensor) and a.dim() == 0 and a.device.type == "cpu"

    if n == RECORD:
        state["baked"] = {i: a.clone() for i, a in enumerate(args) if host_scalar(a)}
    if n > RECORD:
        args = [state["baked"].get(i, a) for i, a in enumerate(args)]
    return run(*args)


def alias_as_copy(n: int, run: Callable[..., Any], args: Sequence[Any], state: dict) -> Any:
    """Replays return copies of outputs that should alias an input."""
    outputs = as_tuple(run(*args))
    if n <= RECORD:
        return outputs
    return tuple(o.clone() if _shares_storage(o, args) else o for o in outputs)


def lagging_outputs(n: int, run: Callable[..., Any], args: Sequence[Any], state: dict) -> Any:
    """Replays return what the previous call computed."""
    outputs = as_tuple(run(*args))
    previous = state.get("previous")
    state["previous"] = tuple(o.detach().clone() for o in outputs)
    return outputs if n <= RECORD else previous


def lost_autograd(n: int, run: Callable[..., Any], args: Sequence[Any], state: dict) -> Any:
    """Replays return outputs detached from the autograd graph."""
    outputs = as_tuple(run(*args))
    return outputs if n <= RECORD else tuple(o.detach() for o in outputs)


def _is_transfer(node: torch.fx.Node) -> bool:
    """A device move in Dynamo's graph: ``cpu()``, ``cuda()``, or ``to`` naming a device."""
    if node.op != "call_method" or node.target not in ("to", "cpu", "cuda"):
        return False
    if node.target != "to":
        return True
    named = [*node.args[1:], node.kwargs.get("device")]
    return any(isinstance(a, (str, torch.device)) for a in named)


class _FrozenTransfers(torch.fx.Interpreter):
    """Runs a graph, handing each device move the value it copied at record time."""

    def __init__(self, graph: torch.fx.GraphModule, n: int, frozen: dict[str, torch.Tensor]):
        super().__init__(graph)
        self.n = n
        self.frozen = frozen

    def run_node(self, node: torch.fx.Node) -> Any:
        value = super().run_node(node)
        if not (_is_transfer(node) and isinstance(value, torch.Tensor)):
            return value
        if self.n == RECORD:
            self.frozen[node.name] = value.detach().clone()
        elif self.n > RECORD and node.name in self.frozen:
            # The recorded values, with the copy's own gradient path kept: the
            # fault is in the data a replay moves, nothing else.
            return value + (self.frozen[node.name] - value.detach())
        return value


def stale_transfers(n: int, run: Callable[..., Any], args: Sequence[Any], state: dict) -> Any:
    """Replays' device copies read the buffer they read at record time (a captured
    host-to-device copy of a host tensor that has since changed), and nothing else goes wrong."""
    frozen = state.setdefault("frozen", {})
    with torch.fx.traceback.preserve_node_meta():
        return _FrozenTransfers(state["graph"], n, frozen).run(*args)


def stale_gradients_backend() -> Callable[..., Any]:
    """AOTAutograd whose compiled backward returns record-time gradients when replaying."""

    def forward_compiler(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Any:
        return make_boxed_func(gm.forward)

    def backward_compiler(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Any:
        state: dict[str, Any] = {"calls": 0}

        def backward(args: list[Any]) -> Any:
            state["calls"] += 1
            grads = gm(*args)
            if state["calls"] == RECORD:
                state["recorded"] = [g.clone() if isinstance(g, torch.Tensor) else g for g in grads]
            return state["recorded"] if state["calls"] > RECORD else grads

        backward._boxed_call = True  # type: ignore[attr-defined]
        return backward

    backend = aot_autograd(fw_compiler=forward_compiler, bw_compiler=backward_compiler)
    backend.__name__ = "faulty_stale_gradients"
    return backend


@dataclass(frozen=True)
class FaultCase:
    """A fault, the kind of failure it must cause, and a program that exposes it.

    ``program`` and ``arguments()`` (or ``fresh(k)``) are what the oracle is
    run on; correct backends pass the same program.
    """

    name: str
    kind: str
    backend: Callable[..., Any]
    program: Callable[..., Any]
    arguments: Callable[[], tuple[Any, ...]] | None = None
    fresh: Callable[[int], tuple[Any, ...]] | None = None


def _fresh_pair(k: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(100 + k)
    return torch.randn(3, generator=g), torch.randn(3, generator=g)


def _fresh_leaf_pair(k: int) -> tuple[torch.Tensor, torch.Tensor]:
    x, y = _fresh_pair(k)
    return x.requires_grad_(), y


def _mutate_second(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    y.add_(3)
    return x * y


def _write_through_view(v: torch.Tensor) -> torch.Tensor:
    v.mul_(2)
    return v.sum()


def _view_of_base() -> tuple[torch.Tensor]:
    base = torch.arange(12.0).reshape(4, 3)
    return (base[1:],)


FAULTS = (
    FaultCase(
        "overwrite_outputs",
        "stale output",
        ReplayBackend("faulty_overwrite_outputs", overwrite_outputs),
        lambda x, y: x * y + 1,
        fresh=_fresh_pair,
    ),
    FaultCase(
        "stale_inputs",
        "value",
        ReplayBackend("faulty_stale_inputs", stale_inputs),
        lambda x, y: x * y + 1,
        fresh=_fresh_pair,
    ),
    FaultCase(
        "lost_input_mutation",
        "mutation",
        ReplayBackend("faulty_lost_input_mutation", lost_input_mutation),
        _mutate_second,
        arguments=lambda: (torch.randn(3), torch.randn(3)),
    ),
    FaultCase(
        "lost_view_write",
        "mutation",
        ReplayBackend("faulty_lost_view_write", lost_view_write),
        _write_through_view,
        arguments=_view_of_base,
    ),
    FaultCase(
        "frozen_rng",
        "value",
        ReplayBackend("faulty_frozen_rng", frozen_rng),
        lambda x: x + torch.rand_like(x),
        arguments=lambda: (torch.zeros(4),),
    ),
    FaultCase(
        "baked_host_scalar",
        "value",
        ReplayBackend("faulty_baked_host_scalar", baked_host_scalar),
        lambda x, s: x * s,
        fresh=lambda k: (torch.ones(3), torch.tensor(float(k))),
    ),
    FaultCase(
        "stale_gradients",
        "grad",
        stale_gradients_backend(),
        lambda x, y: x * y,
        fresh=_fresh_leaf_pair,
    ),
    FaultCase(
        "alias_as_copy",
        "aliasing",
        ReplayBackend("faulty_alias_as_copy", alias_as_copy),
        lambda x: (x[0], x.sum()),
        arguments=lambda: (torch.randn(3, 2),),
    ),
    FaultCase(
        "lagging_outputs",
        "value",
        ReplayBackend("faulty_lagging_outputs", lagging_outputs),
        lambda x, y: x - y,
        fresh=_fresh_pair,
    ),
    FaultCase(
        "stale_transfers",
        "value",
        ReplayBackend("faulty_stale_transfers", stale_transfers),
        lambda x, y: x.to(y.device, copy=True) * y,
        fresh=_fresh_pair,
    ),
    FaultCase(
        "lost_autograd",
        "metadata",
        ReplayBackend("faulty_lost_autograd", lost_autograd),
        lambda x: x.sin(),
        arguments=lambda: (torch.randn(3, requires_grad=True),),
    ),
)


def crash_by_arity(n: int, run: Callable[..., Any], args: Sequence[Any], state: dict) -> Any:
    """Two independent replay crashes: one for one-argument graphs, one for the rest.

    Nearly every program hits one of them, so a short campaign finds both.
    """
    if n > RECORD:
        if len(args) == 1:
            raise RuntimeError("replay of a one-argument graph crashed")
        raise ValueError("replay of a many-argument graph crashed")
    return run(*args)


TWO_CRASHES = ReplayBackend("faulty_two_crashes", crash_by_arity)


def frozen_rng_and_lost_mutation(
    n: int, run: Callable[..., Any], args: Sequence[Any], state: dict
) -> Any:
    """Two independent replay faults in one backend: replays restart the random stream
    where it stood at record time, and mutate private copies of the inputs. A
    campaign meets each through many op mixes; each is one bug."""
    if n == RECORD:
        state["rng"] = torch.get_rng_state()
    if n > RECORD:
        torch.set_rng_state(state["rng"])
    return lost_input_mutation(n, run, args, state)


TWO_FAULTS = ReplayBackend("faulty_two_faults", frozen_rng_and_lost_mutation)


def crash_on_replay(n: int, run: Callable[..., Any], args: Sequence[Any], state: dict) -> Any:
    """Every replay raises: one signature whatever the program."""
    if n > RECORD:
        raise RuntimeError("replay crashed")
    return run(*args)


CRASH_ON_REPLAY = ReplayBackend("faulty_crash_on_replay", crash_on_replay)


def crash_with_threads(n: int, run: Callable[..., Any], args: Sequence[Any], state: dict) -> Any:
    """Every call raises while torch runs more than one intra-op thread: as Inductor's
    CPU code generation asserts for some scatters only with several threads."""
    if torch.get_num_threads() > 1:
        raise AssertionError("code generation for several threads failed")
    return run(*args)


CRASH_WITH_THREADS = ReplayBackend("faulty_crash_with_threads", crash_with_threads)


def autocast_escaped(n: int, run: Callable[..., Any], args: Sequence[Any], state: dict) -> Any:
    """Every call runs the graph with autocast off, whatever the caller set around it:
    a compiled matmul under a bfloat16 autocast comes back in float32."""
    with torch.autocast("cpu", enabled=False):
        return run(*args)


AUTOCAST_ESCAPED = ReplayBackend("faulty_autocast_escaped", autocast_escaped)

_registered = set(torch._dynamo.list_backends(exclude_tags=()))
for _name, _backend in [
    *((f"faulty_{case.name}", case.backend) for case in FAULTS),
    ("faulty_two_crashes", TWO_CRASHES),
    ("faulty_two_faults", TWO_FAULTS),
    ("faulty_crash_on_replay", CRASH_ON_REPLAY),
    ("faulty_crash_with_threads", CRASH_WITH_THREADS),
    ("faulty_autocast_escaped", AUTOCAST_ESCAPED),
]:
    if _name not in _registered:
        register_backend(_backend, name=_name)
