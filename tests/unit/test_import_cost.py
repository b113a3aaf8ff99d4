"""Importing the plugin costs no torch, no hypothesis, and never initialises CUDA."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def run_child(code: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return result.stdout.strip()


def test_hook_module_imports_neither_torch_nor_hypothesis() -> None:
    out = run_child(
        """
        import sys
        import pytest_cgraph.plugin
        import pytest_cgraph
        print(sorted(m for m in ("torch", "hypothesis") if m in sys.modules))
        """
    )
    assert out == "[]"


def test_public_api_loads_on_first_use_without_initialising_cuda() -> None:
    out = run_child(
        """
        import pytest_cgraph, torch
        report = pytest_cgraph.check_equivalent(torch.sin, torch.randn(2), backend="aot_eager")
        print(report.iterations, torch.cuda.is_initialized())
        """
    )
    assert out == "5 False"
