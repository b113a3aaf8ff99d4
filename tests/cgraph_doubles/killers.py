"""Backends that hang, kill or fool the process checking them, from call 3 on.

Registered with Dynamo on import, like ``faults``: ``pytest -p
cgraph_doubles.killers --cgraph-backend faulty_segfault``.
"""

from __future__ import annotations

import contextlib
import ctypes
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch._dynamo.backends.registry import register_backend

from cgraph_doubles.replay import RECORD, ReplayBackend, as_tuple


def segfault(n: int, run: Callable[..., Any], args: Sequence[Any], state: dict) -> Any:
    """The first replay reads address 0: the process dies of SIGSEGV."""
    if n > RECORD:
        ctypes.string_at(0)
    return run(*args)


def hang(n: int, run: Callable[..., Any], args: Sequence[Any], state: dict) -> Any:
    """The first replay never returns (but can be interrupted, as Python code can)."""
    while n > RECORD:
        time.sleep(0.05)
    return run(*args)


def stubborn_hang(n: int, run: Callable[..., Any], args: Sequence[Any], state: dict) -> Any:
    """The first replay never returns and swallows every interruption, as stuck C code would."""
    while n > RECORD:
        with contextlib.suppress(BaseException):  # the point: nothing gets it out
            time.sleep(0.05)
    return run(*args)


#: Graphs compiled so far in this process: ``flaky`` breaks only the first few.
_compiled = {"graphs": 0}
FLAKY_GRAPHS = 1


class FlakyBackend(ReplayBackend):
    """Replays of the process's first graphs are off by one; later graphs are right.

    The first failing program therefore passes when checked again: the
    failure does not reproduce.
    """

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Any:
        _compiled["graphs"] += 1
        broken = _compiled["graphs"] <= FLAKY_GRAPHS
        state: dict[str, Any] = {"calls": 0}

        def replaying(*args: Any) -> Any:
            state["calls"] += 1
            outputs = as_tuple(gm.forward(*args))
            if not broken or state["calls"] <= RECORD:
                return outputs
            return tuple(
                o.detach() + 1 if isinstance(o, torch.Tensor) and o.is_floating_point() else o
                for o in outputs
            )

        return replaying


_registered = set(torch._dynamo.list_backends(exclude_tags=()))
for _name, _backend in [
    ("faulty_segfault", ReplayBackend("faulty_segfault", segfault)),
    ("faulty_hang", ReplayBackend("faulty_hang", hang)),
    ("faulty_stubborn_hang", ReplayBackend("faulty_stubborn_hang", stubborn_hang)),
    ("faulty_flaky", FlakyBackend("faulty_flaky", lambda n, run, args, state: run(*args))),
]:
    if _name not in _registered:
        register_backend(_backend, name=_name)
