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

TRAINING_ONLY = {
    "parameter_update",
    "optimizer_step",
    "clip_grad",
    "scheduled_step",
    "scaled_step",
    "ema_update",
    "accumulate",
}
#: The ops that apply gradients a backward made (loss scaling and accumulation run
#: their own backward; an EMA copy follows the parameter, not its grad).
APPLY_GRADIENTS = {"parameter_update", "optimizer_step", "clip_grad", "scheduled_step"}


def test_a_training_step_updates_its_parameters_as_loops_do() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        drawn = draw_programs(120, families=("training",), seed=1)
    ops = Counter(statement.op for program in drawn for statement in program.statements)
    assert set(ops) >= TRAINING_ONLY, ops
    sources = [program.render() for program in drawn]
    # The hand-written SGD step that rebinds its parameter and then drops its grad.
    assert any(" -= 0.1 * " in s and ".grad = None" in s for s in sources)
    assert any("torch.optim." in s and ".zero_grad(set_to_none=" in s for s in sources)
    # A rate schedule stepped between two optimizer steps; loss scaling (GradScaler
    # or its kernels); an EMA copy written after the update; micro-batches.
    assert any("lr_scheduler." in s and "_schedule.step()" in s for s in sources)
    assert any("GradScaler(" in s or "_amp_foreach_non_finite" in s for s in sources)
    assert any(".lerp_(" in s or "_foreach_lerp_" in s or "(0.9 * " in s for s in sources)
    assert any(".div(2).backward()" in s or ".div(3).backward()" in s for s in sources)
    # The updates find gradients: a backward comes first (the opening loss's, or
    # one drawn later where the opening could not run).
    for program in drawn:
        ops_in_order = [statement.op for statement in program.statements]
        updates = [i for i, op in enumerate(ops_in_order) if op in APPLY_GRADIENTS]
        if updates:
            made = set(ops_in_order[: updates[0]])  # a backward's, or an assigned, grad
            assert made & {"backward", "accumulate", "grad_assign"}, program.render()
    assert sum(p.statements[0].op == "backward" for p in drawn) >= len(drawn) // 2


def test_the_training_ops_are_drawn_by_no_other_family() -> None:
    for op in OPS:
        if op.name in TRAINING_ONLY:
            assert op.families == {"training"}, op
