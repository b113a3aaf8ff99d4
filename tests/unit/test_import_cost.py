"""Importing the plugin costs no torch, no hypothesis, never initialises CUDA, and works on
any platform pytest runs on: it is loaded by every pytest run where it is installed."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path


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
        import pytest_cgraph.plugin.hooks
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


def test_the_plugin_loads_and_runs_where_fcntl_does_not_exist(tmp_path: Path) -> None:
    # ``sys.modules[name] = None`` makes ``import name`` raise ImportError, as on Windows.
    (tmp_path / "test_plain.py").write_text("def test_plain():\n    assert 1 + 1 == 2\n")
    out = run_child(
        f"""
        import sys
        sys.modules["fcntl"] = None
        import pytest
        import pytest_cgraph.plugin.hooks, pytest_cgraph.plugin.campaign
        import pytest_cgraph.plugin.crashes, pytest_cgraph.recording.repro
        import pytest_cgraph.checking.guard, pytest_cgraph.checking.checkers
        # --cgraph-iters is refused unless the plugin's hooks are loaded.
        code = pytest.main(["-q", "-p", "no:cacheprovider", "--cgraph-iters=3", {str(tmp_path)!r}])
        print("exit", int(code), "fcntl" in sys.modules and sys.modules["fcntl"] is not None)
        """
    )
    assert out.splitlines()[-1] == "exit 0 False"
