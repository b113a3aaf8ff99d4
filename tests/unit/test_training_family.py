"""The ``training`` family: what a training step does to its parameters.

A step's first statement is a backward of a loss over every input that
requires grad; its updates then find gradients to apply: hand-written
(``p -= lr * p.grad``, which rebinds the name, and the method forms), through
``torch.optim`` built inside the step, with gradients cleared or clipped.
The ops are the family's alone: ``mixed``, whose draws the suite's seeds
fix, draws none of them.
"""

from __future__ import annotations

import warnings
from collections import Counter

from pytest_cgraph.strategies import OPS, draw_programs

TRAINING_ONLY = {"parameter_update", "optimizer_step", "clip_grad"}


def test_a_training_step_updates_its_parameters_as_loops_do() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        drawn = draw_programs(60, families=("training",), seed=1)
    ops = Counter(statement.op for program in drawn for statement in program.statements)
    assert set(ops) >= TRAINING_ONLY, ops
    sources = [program.render() for program in drawn]
    # The hand-written SGD step that rebinds its parameter and then drops its grad.
    assert any(" -= 0.1 * " in s and ".grad = None" in s for s in sources)
    assert any("torch.optim." in s and ".zero_grad(set_to_none=" in s for s in sources)
    # The updates find gradients: a backward comes first (the opening loss's, or
    # one drawn later where the opening could not run).
    for program in drawn:
        ops_in_order = [statement.op for statement in program.statements]
        updates = [i for i, op in enumerate(ops_in_order) if op in TRAINING_ONLY]
        if updates:
            assert "backward" in ops_in_order[: updates[0]], program.render()
    assert sum(p.statements[0].op == "backward" for p in drawn) >= len(drawn) // 2


def test_the_training_ops_are_drawn_by_no_other_family() -> None:
    for op in OPS:
        if op.name in TRAINING_ONLY:
            assert op.families == {"training"}, op
