"""The ``to`` op on a CUDA run: host-device transfers drawn, the CPU catalog untouched.

Programs are drawn on host tensors wherever they will run, so these tests
check the catalog a CUDA run draws from and the source it renders; only the
last one, on a machine with a GPU, runs that source.
"""

from __future__ import annotations

import re

import pytest
import torch
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from pytest_cgraph.strategies import FAMILIES, draw_programs, programs
from pytest_cgraph.strategies.ops import (
    _CUDA_TRANSFERS,
    _TO_DEVICE_FORMS,
    Context,
    Var,
    _to_device,
    _to_device_cuda,
    ops_for,
)

SEED = 20261125


def _to_record(family: str, device: str) -> object:
    basic, own = ops_for(family, device)
    return next(op for op in (*basic, *own) if op.name == "to")


@pytest.mark.parametrize("family", FAMILIES)
def test_a_cpu_run_draws_from_the_catalog_as_it_is(family: str) -> None:
    assert ops_for(family, "cpu") == ops_for(family)


@pytest.mark.parametrize("device", ["cuda", "cuda:1"])
@pytest.mark.parametrize("family", ["transfer", "mixed"])
def test_a_cuda_run_swaps_only_the_to_record(family: str, device: str) -> None:
    cpu, cuda = ops_for(family), ops_for(family, device)
    assert _to_record(family, "cpu").build is _to_device
    assert _to_record(family, device).build is _to_device_cuda
    for cpu_ops, cuda_ops in zip(cpu, cuda, strict=True):
        # Same names in the same places: coverage and shrinking see one catalog.
        assert [op.name for op in cpu_ops] == [op.name for op in cuda_ops]
        assert [op for op in cpu_ops if op.name != "to"] == [
            op for op in cuda_ops if op.name != "to"
        ]


def _rendered_forms(builder: object) -> list[str]:
    """Every line ``builder`` can render for ``v0`` with input ``x0``."""
    x0 = Var("x0", torch.ones(2), "input")
    target = Var("v0", torch.ones(2), "intermediate")
    lines = []
    index = 0
    while True:

        def draw(strategy: st.SearchStrategy, at: int = index) -> object:
            elements = getattr(strategy, "wrapped_strategy", strategy).elements
            if at >= len(elements):
                raise IndexError
            return elements[at]

        try:
            rendered, binds = builder(Context(draw, target, [x0, target], "v1"))  # type: ignore[operator]
        except IndexError:
            return lines
        assert binds
        lines.extend(rendered)
        index += 1


def test_the_cuda_to_record_moves_tensors_between_host_and_gpu() -> None:
    lines = _rendered_forms(_to_device_cuda)
    assert lines == [
        f"v1 = {form.format(x='v0', d='x0')}" for form in (*_TO_DEVICE_FORMS, *_CUDA_TRANSFERS)
    ]
    text = "\n".join(lines)
    for needed in (
        "v0.cpu().cuda()",
        "v0.cpu().to('cuda')",
        "non_blocking=True",
        "v0.cpu().pin_memory().to(x0.device, non_blocking=True)",
        "v0 + v0.sum().cpu()",  # a 0-dim host tensor meets a device tensor
    ):
        assert needed in text
    # The CPU record renders none of it.
    assert not any(
        "cuda" in line or "pin_memory" in line or "non_blocking=True)." in line
        for line in _rendered_forms(_to_device)
    )


def _cuda_lines(drawn: list) -> list[str]:
    """The drawn statement lines that only a CUDA run's catalog has."""
    patterns = [
        re.compile(
            re.escape(form).replace(re.escape("{x}"), r"\w+").replace(re.escape("{d}"), r"\w+")
        )
        for form in _CUDA_TRANSFERS
    ]
    return [
        line
        for program in drawn
        for statement in program.statements
        for line in statement.lines
        if any(pattern.search(line) for pattern in patterns)
    ]


def test_transfer_programs_drawn_for_a_cuda_run_carry_the_transfers() -> None:
    drawn = draw_programs(200, families=("transfer",), seed=SEED, device="cuda")
    lines = _cuda_lines(drawn)
    assert any("non_blocking=True" in line for line in lines)
    assert any(".sum().cpu()" in line or ".flatten()[0].cpu()" in line for line in lines)
    rendered = "\n".join(program.render() for program in drawn)
    assert all(line in rendered for line in lines)
    if not torch.cuda.is_available():
        # Drawn on a machine without a GPU, the forms naming CUDA are run,
        # rejected by torch, and dropped: never drawn where they cannot run.
        assert not any(
            ".cuda(" in line or "'cuda'" in line or "pin_memory" in line for line in lines
        )
    # The CPU catalog draws none of them from the same seed.
    assert _cuda_lines(draw_programs(200, families=("transfer",), seed=SEED)) == []


def test_families_without_the_to_record_draw_alike_on_either_device() -> None:
    cpu = draw_programs(20, families=("views",), seed=SEED)
    cuda = draw_programs(20, families=("views",), seed=SEED, device="cuda")
    assert [p.render() for p in cpu] == [p.render() for p in cuda]


@pytest.mark.parametrize("device", ["tpu", "cuda0", ""])
def test_an_unknown_device_is_rejected(device: str) -> None:
    with pytest.raises(InvalidArgument, match="device must be cpu, cuda or cuda:N"):
        programs(device=device)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_transfer_programs_run_eagerly_on_the_gpu() -> None:
    from pytest_cgraph import InvalidProgram
    from pytest_cgraph.checking.runner import check_source

    drawn = draw_programs(40, families=("transfer",), seed=SEED, device="cuda")
    with_transfers = [p for p in drawn if _cuda_lines([p])]
    assert with_transfers
    ran = 0
    for program in with_transfers:
        try:
            check_source(program.render(), backend="eager", device="cuda")
            ran += 1
        except InvalidProgram:
            continue  # drawn on host tensors; a device mismatch is eager's to reject
    assert ran
