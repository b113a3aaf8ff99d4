"""Hazard classes: what a run's own repro files require of a program to claim it."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_cgraph.oracle.difference import Difference, Kind, Place, Role
from pytest_cgraph.registry.entries import Registry, program_ops
from pytest_cgraph.registry.hazards import hazard_of, hazards
from pytest_cgraph.registry.repro_files import BASE_SIGNATURE, LAYER, MARKER_LINE

WRONG = Difference(Kind.VALUE, 3, Place(Role.OUTPUT, index=0))


@pytest.mark.parametrize(
    ("call", "hazard"),
    [
        ("rand_like", "rng"),
        ("bernoulli_", "rng"),  # a random draw before an in-place write
        ("requires_grad_", "autograd"),
        ("squeeze_", "metadata"),
        (".data=", "metadata"),
        ("_foreach_mul_", "inplace"),
        ("[]=", "inplace"),
        ("[:]", "view"),
        ("cpu", "transfer"),
        ("graph_break", "graph"),
        ("clone", None),
        ("sum", None),
        ("__add__", None),
    ],
)
def test_each_call_has_the_hazard_of_its_kind(call: str, hazard: str | None) -> None:
    assert hazard_of(call) == hazard


def _repro(directory: Path, name: str, body: str) -> None:
    (directory / f"{name}.py").write_text(
        f"{MARKER_LINE}\n{BASE_SIGNATURE}value-output\n{LAYER}none\n\n"
        f"PROGRAM_SOURCE = r'''\ndef program(a0):\n{body}    return (a0,)\n'''\n"
    )


def test_a_run_s_repro_claims_the_same_hazards_met_through_other_ops(tmp_path: Path) -> None:
    """The rng fault found through rand_like and clone is the fault a later
    program meets through randn_like and sin; a lost in-place write is not it."""
    _repro(tmp_path, "value-output", "    v0 = a0.clone()\n    a0 = v0 + torch.rand_like(v0)\n")
    registry = Registry.load([tmp_path])
    (entry,) = registry.entries()
    assert entry.by_hazard and hazards(entry.ops) == {"rng"}
    again = program_ops("def program(a0):\n    return (torch.sin(a0) + torch.randn_like(a0),)\n")
    assert registry.match(WRONG, lambda: None, again) is entry
    written = program_ops("def program(a0):\n    a0.mul_(2)\n    return (a0,)\n")
    assert registry.match(WRONG, lambda: None, written) is None


def test_a_declared_ops_list_still_asks_for_every_call(tmp_path: Path) -> None:
    path = tmp_path / "value-output.toml"
    path.write_text(
        "# pytest-cgraph entry\n# base signature: value-output\n# layer: none\n\n"
        'signature = "value-output"\nbackend = "aot_eager"\nbackend_modules = []\n'
        'device = "cpu"\nops = ["rand_like"]\n'
        "program = '''\ndef program(a0):\n    return (a0 + torch.rand_like(a0),)\n'''\n"
    )
    registry = Registry.load([tmp_path])
    (entry,) = registry.entries()
    assert not entry.by_hazard
    assert registry.match(WRONG, lambda: None, frozenset({"randn_like"})) is None
    assert registry.match(WRONG, lambda: None, frozenset({"rand_like", "sin"})) is entry


def test_a_view_or_autograd_call_of_the_minimal_program_is_not_required(tmp_path: Path) -> None:
    """Which view a lost write is read through is the draw's, not the bug's."""
    _repro(tmp_path, "value-output", "    a0.add_(1)\n    a0 = a0.as_strided((1,), (1,))\n")
    registry = Registry.load([tmp_path])
    (entry,) = registry.entries()
    assert hazards(entry.ops) == {"inplace", "view"}
    assert registry.match(WRONG, lambda: None, frozenset({"mul_", "detach"})) is entry
    assert registry.match(WRONG, lambda: None, frozenset({"as_strided"})) is None


def test_a_program_of_no_hazard_is_its_computation_every_call_required(tmp_path: Path) -> None:
    """One wrong sin under Inductor does not hide a later wrong matmul."""
    _repro(tmp_path, "value-output", "    a0 = torch.sin(a0) * 2\n")
    registry = Registry.load([tmp_path])
    (entry,) = registry.entries()
    assert entry.by_hazard and hazards(entry.ops) == frozenset()
    assert registry.match(WRONG, lambda: None, frozenset({"matmul"})) is None
    assert registry.match(WRONG, lambda: None, frozenset({"sin", "matmul"})) is entry


def test_a_module_call_has_its_class_s_hazard() -> None:
    assert hazard_of("Dropout()") == "rng"
    assert hazard_of("Counter()") is None


def test_a_template_class_is_a_call_of_its_name_even_when_handed_to_a_transform() -> None:
    called = program_ops("def program(a0):\n    return (StraightSin.apply(a0),)\n")
    handed = program_ops(
        "def program(a0):\n"
        "    return (torch.func.jvp(StraightSin.apply, (a0,), (torch.ones_like(a0),))[1],)\n"
    )
    assert "StraightSin" in called and "StraightSin" in handed
    # A class of the program's own, not a template, is no such call; nor is
    # the module template, which a call of its argument names (Counter()).
    assert "Mine" not in program_ops("def program(a0):\n    return (Mine.apply(a0),)\n")
    named = "def program(m1, a0):\n    assert isinstance(m1, Counter)\n    return (a0,)\n"
    assert "Counter" not in program_ops(named)
    assert "autograd.grad" in program_ops(
        "def program(a0):\n    return (torch.autograd.grad(a0.sum(), a0)[0],)\n"
    )
