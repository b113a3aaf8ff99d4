"""``benchmarks/naming.py``: its rewrites keep a program's meaning, and its measures fire."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from naming import REWRITES, main

from pytest_cgraph.registry.entries import program_ops

PROGRAM = """import torch


def program(a0, a1):
    v0 = a0.add(a1) * 2
    v1 = torch.sin(v0)
    a0.add_(1)
    return (v1 + a0,)


def inputs(k):
    return (torch.ones(2), torch.full((2,), 0.5))
"""


def _run(source: str) -> list[torch.Tensor]:
    space: dict[str, object] = {}
    exec(compile(source, "<program>", "exec"), space)
    args = space["inputs"](1)  # type: ignore[operator]
    return [*space["program"](*args), *args]  # type: ignore[operator]


@pytest.mark.parametrize("name", sorted(REWRITES))
def test_a_rewrite_computes_what_the_program_did_and_keeps_its_calls(name: str) -> None:
    rewritten = REWRITES[name](PROGRAM)
    assert rewritten is not None and rewritten != PROGRAM
    for got, want in zip(_run(rewritten), _run(PROGRAM), strict=True):
        torch.testing.assert_close(got, want)
    # Every call the program made is still made (an extra op adds its own).
    assert program_ops(PROGRAM) <= program_ops(rewritten)


def test_a_leave_one_out_and_a_variant_replay_name_the_bug_right(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # One quick aot_eager bug of the 2.13 baseline, one form: named as itself,
    # new without itself, each variant named as itself.
    if not torch.__version__.startswith("2.13."):
        pytest.skip("the measure replays the torch-2.13 baseline")
    assert main(["--forms-per-bug", "1", "--bugs", "foreach-duplicate-tensor"]) == 0
    out = capsys.readouterr().out
    assert "own forms: right 1" in out
    assert "leave one bug out: new (right) 1" in out
    assert "variants named right: 3 of 3 (100.0 %)" in out
    assert "wrong names (leave-one-out and variants): 0" in out
