"""Shrinking reaches small programs: few statements, sides of 1 or 2."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import find as hypothesis_find

from pytest_cgraph.strategies import Program, programs
from pytest_cgraph.strategies.seeded_draws import without_local_constants

QUIET = settings(
    database=None, derandomize=True, max_examples=2000, suppress_health_check=list(HealthCheck)
)


def find(strategy: Any, condition: Callable[[Program], bool], settings: settings) -> Program:
    """Hypothesis's ``find`` as a campaign draws: without the constants of local modules,
    whose set differs between a plain process and an xdist worker."""
    with without_local_constants():
        return hypothesis_find(strategy, condition, settings=settings)


def largest_side(program: Program) -> int:
    return max((size for spec in program.inputs for size in spec.shape), default=1)


def test_in_place_op_through_a_view_of_an_input_shrinks_small() -> None:
    minimal = find(
        programs(families=("mutation",)),
        lambda p: "inplace_through_view_of_input" in p.all_features(),
        settings=QUIET,
    )
    assert len(minimal.statements) <= 3, minimal.render()
    assert largest_side(minimal) <= 2, minimal.render()


def test_backward_through_a_mutated_intermediate_shrinks_small() -> None:
    minimal = find(
        programs(families=("autograd",)),
        lambda p: {"backward", "inplace_on_intermediate"} <= p.all_features(),
        settings=QUIET,
    )
    assert len(minimal.statements) <= 4, minimal.render()
    assert largest_side(minimal) <= 2, minimal.render()


def test_a_single_op_shrinks_to_one_statement_and_one_input() -> None:
    minimal = find(programs(), lambda p: "dropout" in p.all_features(), settings=QUIET)
    assert [s.op for s in minimal.statements] == ["dropout"]
    assert len(minimal.inputs) == 1
    assert minimal.inputs[0].shape == (1,)


def test_two_chained_compiled_functions_shrink_to_two_statements_in_default_grad_mode() -> None:
    minimal = find(
        programs(families=("mutation",)),
        lambda p: p.chained and "inplace_on_input" in p.all_features(),
        settings=QUIET,
    )
    assert len(minimal.statements) <= 2, minimal.render()
    assert minimal.grad_mode == "grad", minimal.render()
    assert largest_side(minimal) <= 2, minimal.render()


def test_a_non_leaf_input_under_an_ambient_grad_mode_shrinks_to_one_input() -> None:
    # About 1 mixed program in 600 draws both (5 of 3000, seeds 1 and 2):
    # more examples than the others need, so that one is met whatever other
    # draws a change to the generator moves.
    minimal = find(
        programs(families=("mixed",)),
        lambda p: p.grad_mode != "grad" and "layout:nonleaf" in p.all_features(),
        settings=settings(QUIET, max_examples=8000),
    )
    assert len(minimal.inputs) == 1 and len(minimal.statements) <= 1, minimal.render()
    assert minimal.schedule in ("fresh", "dynamic"), minimal.render()
    assert minimal.grad_mode == "no_grad", minimal.render()  # the simpler of the two


def test_a_foreach_write_to_an_input_shrinks_to_two_statements_at_most() -> None:
    minimal = find(
        programs(families=("mutation",)),
        lambda p: "foreach" in p.all_features() and "inplace_on_input" in p.all_features(),
        settings=QUIET,
    )
    ops = [s.op for s in minimal.statements]
    assert "foreach" in ops and len(ops) <= 2, minimal.render()
    assert largest_side(minimal) <= 2, minimal.render()


def test_a_checkpointed_body_under_backward_shrinks_small() -> None:
    minimal = find(
        programs(families=("autograd",)),
        lambda p: {"checkpoint", "backward"} <= p.all_features(),
        settings=QUIET,
    )
    assert len(minimal.statements) <= 3, minimal.render()
    assert largest_side(minimal) <= 2, minimal.render()
