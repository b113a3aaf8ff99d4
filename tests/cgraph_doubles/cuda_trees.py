"""A CPU stand-in for CUDA-graph trees and for CUDA device handling.

``CudaGraphTreesDouble`` mimics the trees' observable contract, so that the
harness's CUDA-only handling can be tested without a GPU:

- call 1 warms up (runs the graph as is);
- call 2 records: inputs are copied into static buffers, outputs are kept in
  a static pool;
- calls 3.. replay: new inputs are copied into the static buffers, the graph
  writes into the same pool, and outputs of the previous replay are
  invalidated: reading one raises the documented "overwritten by a
  subsequent run" error;
- ``torch.compiler.cudagraph_mark_step_begin()`` is observed through the same
  counter the real trees read.

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
    handed_out: list[weakref.ref[PoolOutput]] = field(default_factory=list)


class CudaGraphTreesDouble:
    """A ``torch.compile`` backend with the replay semantics of CUDA-graph trees.

    ``invalidate_on_replay=False`` gives the broken variant whose replays
    overwrite earlier outputs silently.
    """

    uses_cudagraphs = True

    def __init__(self, invalidate_on_replay: bool = True) -> None:
        self.__name__ = "cudagraph_trees_double"
        self.invalidate_on_replay = invalidate_on_replay
        self.step_marks_seen: list[int] = []
        self.replays = 0
        self.recordings = 0

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Any:
        graph = GraphState()

        def run(*args: Any) -> Any:
            graph.calls += 1
            self.step_marks_seen.append(MarkStepBox.mark_step_counter)
            if graph.calls == WARMUP:
                return gm.forward(*args)
            if graph.calls == RECORD:
                self.recordings += 1
                graph.static_inputs = [_static_copy(a) for a in args]
            else:
                self.replays += 1
                self._invalidate(graph)
                _copy_all(graph.static_inputs, args)
            outputs = as_tuple(gm.forward(*graph.static_inputs))
            _copy_all(args, graph.static_inputs)  # mutated inputs are written back
            if graph.calls == RECORD:
                graph.pool = [o.detach().clone() for o in outputs]
            else:
                _copy_all(graph.pool, outputs)
            handed = [buffer.as_subclass(PoolOutput) for buffer in graph.pool]
            graph.handed_out = [weakref.ref(h) for h in handed]
            return tuple(handed)

        return run

    def _invalidate(self, graph: GraphState) -> None:
        if not self.invalidate_on_replay:
            return
        for ref in graph.handed_out:
            out = ref()
            if out is not None:
                out.stale = True


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

    def synchronize(self) -> None:
        self.synchronizations += 1

    def manual_seed(self, seed: int) -> None:
        self.seeds.append(seed)
        torch.manual_seed(seed)
