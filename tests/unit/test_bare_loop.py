"""The benchmarks' bare loop runs a program's compiled side as the protocol defines it.

Every figure of ``benchmarks/`` is the harness's time over this loop's on
the same sources, so a loop that skipped part of the protocol (compiled
functions, grad mode, ``advance``, compiled autograd) would make the
harness look dearer than it is, or cheaper.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from bare_loop import bare_runner

SOURCE = """
import sys

import torch

probe = sys.modules["bare_loop_probe"]


def stage(a0):
    return (a0 * 2,)


def program(a0):
    probe.grad_enabled.append(torch.is_grad_enabled())
    (v0,) = stage(a0)
    return (v0 + 1,)


def inputs(k):
    return (torch.ones(2, requires_grad=True),)


def advance(k, args, outputs):
    probe.advanced.append(k)
    return args


ITERS = 3
COMPILE = ("stage",)
GRAD_MODE = "no_grad"
"""


@pytest.fixture
def probe(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """A module the program reports to, and a backend that notes each graph's ops."""
    module = types.ModuleType("bare_loop_probe")
    module.grad_enabled = []  # type: ignore[attr-defined]
    module.advanced = []  # type: ignore[attr-defined]
    module.graph_ops = []  # type: ignore[attr-defined]

    def backend(gm: Any, example_inputs: list[Any]) -> Any:
        module.graph_ops.append(  # type: ignore[attr-defined]
            sorted(str(node.target) for node in gm.graph.nodes if node.op == "call_function")
        )
        return gm.forward

    module.backend = backend  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "bare_loop_probe", module)
    return module


def test_the_bare_loop_honours_compile_grad_mode_and_advance(probe: types.ModuleType) -> None:
    run = bare_runner("bare_loop_probe:backend", lean=False)
    assert run(SOURCE) == "pass"
    assert probe.graph_ops == [["<built-in function mul>"]]  # ``stage`` alone, not the glue
    assert probe.grad_enabled == [False, False, False]
    assert probe.advanced == [1, 2]


def test_the_bare_loop_says_error_for_a_program_that_raises(probe: types.ModuleType) -> None:
    run = bare_runner("bare_loop_probe:backend", lean=False)
    assert run(SOURCE.replace("a0 * 2", "a0.view(3)")) == "error"
