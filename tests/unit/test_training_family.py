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
    # Every step opens with the loss's backward, so the updates have gradients.
    assert all(
        program.statements[0].op == "backward"
        for program in drawn
        if any(s.op in TRAINING_ONLY for s in program.statements)
    )


def test_the_training_ops_are_drawn_by_no_other_family() -> None:
    for op in OPS:
        if op.name in TRAINING_ONLY:
            assert op.families == {"training"}, op
