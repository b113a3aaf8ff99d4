"""A compiled-graph wrapper that counts calls, as a replaying backend would.

Calls 1 and 2 of a graph are its warm-up and its recording; from call 3 on
a CUDA-graph backend replays. Every fault here appears only in replays, as
a broken replay path would.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

WARMUP, RECORD = 1, 2

#: ``fault(call_number, run, args, state) -> outputs``: how one call of a
#: graph goes; ``run(*args)`` executes the graph faithfully.
Fault = Callable[[int, Callable[..., Any], Sequence[Any], dict[str, Any]], Any]


class ReplayBackend:
    """A ``torch.compile`` backend that runs Dynamo's graph under a ``Fault``."""

    def __init__(self, name: str, fault: Fault) -> None:
        self.__name__ = name
        self.fault = fault

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Any:
        state: dict[str, Any] = {"calls": 0, "graph": gm}

        def replaying(*args: Any) -> Any:
            state["calls"] += 1
            return self.fault(state["calls"], gm.forward, args, state)

        return replaying


def as_tuple(outputs: Any) -> tuple[Any, ...]:
    """Dynamo graphs return a tuple or list of outputs; normalise to a tuple."""
    return tuple(outputs) if isinstance(outputs, (tuple, list)) else (outputs,)
