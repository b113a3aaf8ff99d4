"""The plain training-loop check of ``benchmarks/gpu/`` runs the examples' steps beside eager.

On an H100 it told a torch bug (a kept momentum buffer invalidated by the
trees' next generation) from a habit of the check; here it runs on CPU,
where nothing is captured, and must find each step equal to its eager twin
(a step that differed would be a difference of the loop itself).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu" / "training_loop.py"


def test_each_step_is_run_with_and_without_the_step_mark_beside_eager() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--device", "cpu", "--backend", "aot_eager", "--iters", "2"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [line for line in done.stdout.splitlines() if line.startswith("aot_eager")]
    assert len(lines) == 8  # four steps, each without and with the mark

    def verdict(step: str, mark: str) -> str:
        (line,) = [line for line in lines if step in line and f"mark_step={mark}" in line]
        return line.rsplit("  ", 1)[-1]

    assert verdict("sgd-momentum, zero_grad first", "no ") == "ok"
    assert verdict("sgd-plain, zero_grad first", "yes") == "ok"
    assert verdict("backward only, grads accumulate", "yes") == "ok"
