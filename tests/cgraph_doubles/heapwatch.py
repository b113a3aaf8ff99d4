"""A backend that notes how much of the heap the cycle collector skips when it compiles.

``pytest --cgraph`` freezes the long-lived heap while an item checks
programs (:mod:`pytest_cgraph.checking.heap`); a test reads ``FROZEN_AT_COMPILE``
to see that it did, and that it handed the heap back afterwards.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any

import torch

#: ``gc.get_freeze_count()`` at each compile, in order.
FROZEN_AT_COMPILE: list[int] = []


def watching_backend(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
    """Run the graph as traced (like ``eager``), noting the frozen object count."""
    FROZEN_AT_COMPILE.append(gc.get_freeze_count())
    return gm.forward


def frozen_heap_required(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
    """Compile like ``eager``, but only where the heap is frozen: elsewhere the check fails."""
    if gc.get_freeze_count() == 0:
        raise RuntimeError("compiled with nothing frozen")
    return gm.forward
