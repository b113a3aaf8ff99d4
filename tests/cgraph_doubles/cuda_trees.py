"""A CPU stand-in for CUDA-graph trees and for CUDA device handling.

``CudaGraphTreesDouble`` mimics the trees' observable contract, as an H100
run with torch 2.11 showed it, so that the harness's CUDA-only handling can
be tested without a GPU:

- call 1 warms up (runs the graph as is), call 2 records (inputs are copied
  into static buffers, outputs are kept in a static pool); each hands out
  tensors of its own, which the next call (a new generation: the harness
  marks a step before every call) invalidates: reading one raises the
  documented "overwritten by a subsequent run" error;
- calls 3.. replay: new inputs are copied into the static buffers and the
  graph writes into the same pool; every replay hands out *the same* cached
  tensor objects (``reconstruct_outputs``' ``cached_tensor_outputs``), so an
  output kept from an earlier replay silently holds the latest values
  (pytorch/pytorch#122192), never the error (the harness counts it as the
  documented overwrite);
- ``torch.compiler.cudagraph_mark_step_begin()`` is observed through the same
  counter the real trees read.

``cache_replay_outputs=False`` gives the contract the documentation states
(every replay's outputs are its own and are invalidated by the next);
with ``invalidate=False`` too, each replay hands out new tensors over the
same pool and earlier ones silently hold its values, as the real trees do
for outputs they rebuild on every replay (an output aliasing another, a
view AOTAutograd regenerates: an H100 run met 54). ``scribble=True`` is a
broken variant: each call overwrites what earlier calls handed out while
its own outputs live elsewhere, in memory no later output shares.

``RecordingCudaOps`` stands in for the runner's CUDA device handling and
records what it was asked to do.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch._inductor.cudagraph_trees import MarkStepBox

from cgraph_doubles.replay import RECORD, WARMUP, as_tuple

#: The message real CUDA-graph trees give (torch/_inductor/cudagraph_trees.py).
OVERWRITTEN = (
    "Error: accessing tensor output of CUDAGraphs that has been overwritten by a "
    "subsequent run. To prevent overwriting, clone the tensor outside of "
    "torch.compile() or call torch.compiler.cudagraph_mark_step_begin() before "
    "each model invocation."
)


class PoolOutput(torch.Tensor):
    """An output living in the static pool; any use after invalidation raises."""

    stale: bool = False

    @classmethod
    def __torch_function__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        for arg in (*args, *(kwargs or {}).values()):
            if isinstance(arg, PoolOutput) and arg.stale:
                raise RuntimeError(OVERWRITTEN)
        with torch._C.DisableTorchFunctionSubclass():
            return func(*args, **(kwargs or {}))


@dataclass
class GraphState:
    """One recorded graph: its static inputs, its output pool, what it handed out."""

    calls: int = 0
    static_inputs: list[Any] = field(default_factory=list)
    pool: list[torch.Tensor] = field(default_factory=list)
    #: The tensors every replay hands out again (real trees' cached outputs).
    cached: list[PoolOutput] = field(default_factory=list)


class CudaGraphTreesDouble:
    """A ``torch.compile`` backend with the replay semantics of CUDA-graph trees."""

    uses_cudagraphs = True

    def __init__(
        self, cache_replay_outputs: bool = True, invalidate: bool = True, scribble: bool = False
    ) -> None:
        self.__name__ = "cudagraph_trees_double"
        self.cache_replay_outputs = cache_replay_outputs
        self.invalidate = invalidate
        self.scribble = scribble
        #: What every call handed out, for ``scribble`` to overwrite.
        self.all_handed_out: list[torch.Tensor] = []
        self.step_marks_seen: list[int] = []
        self.replays = 0
        self.recordings = 0
        #: Outputs the last call handed out of its own, across graphs: as the
        #: real trees' generations, any next call invalidates them.
        self.handed_out: list[weakref.ref[PoolOutput]] = []

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Any:
        graph = GraphState()

        def run(*args: Any) -> Any:
            graph.calls += 1
            self.step_marks_seen.append(MarkStepBox.mark_step_counter)
            self._invalidate()  # a new generation: earlier outputs are overwritten
            if graph.calls == WARMUP:
                # Outputs that are inputs stay the inputs: only fresh memory is the pool's.
                outputs = _run(gm, args)
                fresh = [o for o in outputs if not any(o is a for a in args)]
                handed = iter(self._hand_out(fresh))
                return tuple(o if any(o is a for a in args) else next(handed) for o in outputs)
            if graph.calls == RECORD:
                self.recordings += 1
                graph.static_inputs = [_static_copy(a) for a in args]
            else:
                self.replays += 1
                _copy_all(graph.static_inputs, args)
            outputs = _run(gm, graph.static_inputs)
            _copy_all(args, graph.static_inputs)  # mutated inputs are written back
            if graph.calls == RECORD:
                graph.pool = [o.detach().clone() for o in outputs]
                return self._hand_out(graph.pool)
            _copy_all(graph.pool, outputs)
            if self.scribble:
                for earlier in self.all_handed_out:
                    with torch.no_grad():
                        earlier.add_(1)  # memory no output of this call occupies
                copies = tuple(buffer.clone() for buffer in graph.pool)
                self.all_handed_out.extend(copies)
                return copies
            if not self.cache_replay_outputs:
                return self._hand_out(graph.pool)
            if not graph.cached:
                graph.cached = [buffer.as_subclass(PoolOutput) for buffer in graph.pool]
            self.handed_out = []  # cached outputs are live: the next replay reuses them
            return tuple(graph.cached)

        return run

    def _hand_out(self, buffers: Sequence[torch.Tensor]) -> tuple[Any, ...]:
        handed = [buffer.as_subclass(PoolOutput) for buffer in buffers]
        self.handed_out = [weakref.ref(h) for h in handed]
        return tuple(handed)

    def _invalidate(self) -> None:
        if not self.invalidate:
            return
        for ref in self.handed_out:
            out = ref()
            if out is not None:
                out.stale = True


def _run(gm: torch.fx.GraphModule, args: Sequence[Any]) -> tuple[Any, ...]:
    return as_tuple(gm.forward(*args))


@torch.no_grad()
def _copy_all(destinations: Sequence[Any], sources: Sequence[Any]) -> None:
    for destination, source in zip(destinations, sources, strict=True):
        if isinstance(destination, torch.Tensor):
            destination.copy_(source)


def _static_copy(value: Any) -> Any:
    return value.detach().clone() if isinstance(value, torch.Tensor) else value


@dataclass
class RecordingCudaOps:
    """The runner's device handling for CUDA, recorded instead of done."""

    synchronizations: int = 0
    seeds: list[int] = field(default_factory=list)
    grads_in_graph_pool = True

    def synchronize(self) -> None:
        self.synchronizations += 1

    def manual_seed(self, seed: int) -> None:
        self.seeds.append(seed)
        torch.manual_seed(seed)
