"""The ``spellings`` family: the in-place and metadata ops spelled as the ATen ops they
call, and ``torch.cond``, over the views family's views.

``Tensor.resize_`` graph-breaks under Dynamo; ``torch.ops.aten.resize_`` of an
intermediate with an outstanding view is traced (#81385 reproduces only so).
The ops are the family's alone: ``mixed`` draws none.
"""

from __future__ import annotations

import warnings
from collections import Counter

import torch

from pytest_cgraph.strategies import OPS, draw_programs
from pytest_cgraph.strategies.ops import _respelled

SPELLINGS_ONLY = {
    "aten.add_",
    "aten.mul_",
    "aten.index_put_",
    "aten.resize_",
    "aten.t_",
    "aten.transpose_",
    "aten.unsqueeze_",
    "aten.as_strided_",
    "cond",
}


def test_a_method_call_is_respelled_as_its_aten_op_with_the_arguments_the_op_takes() -> None:
    assert _respelled("v0.t_()", "v0", "t_") == "torch.ops.aten.t_(v0)"
    # resize_ takes its size as a list; the method takes an int.
    respelled = _respelled("v0.resize_(min(1, v0.numel()))", "v0", "resize_")
    assert respelled == "torch.ops.aten.resize_(v0, [min(1, v0.numel())])"
    assert _respelled("v0.resize_(6).fill_(2.0)", "v0", "resize_") == (
        "torch.ops.aten.resize_(v0, [6]).fill_(2.0)"
    )
    # Each respelled line runs as the method did.
    for line in ("v0.resize_(min(1, v0.numel()))", "v0.resize_(6).fill_(2.0)", "v0.t_()"):
        method = line.split(".")[1].split("(")[0]
        by_method, by_op = torch.ones(2, 3) * 2, torch.ones(2, 3) * 2
        exec(line, {"torch": torch, "v0": by_method})
        exec(_respelled(line, "v0", method), {"torch": torch, "v0": by_op})
        assert by_op.shape == by_method.shape and torch.equal(by_op, by_method)


def test_the_spellings_family_draws_every_aten_op_and_cond_beside_views() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        drawn = draw_programs(150, families=("spellings",), seed=3)
    ops = Counter(statement.op for program in drawn for statement in program.statements)
    assert set(ops) >= SPELLINGS_ONLY, ops
    assert ops["view"] > 0 and ops["select"] > 0
    sources = "\n".join(program.render() for program in drawn)
    assert "torch.ops.aten.resize_(" in sources and "torch.cond(" in sources


def test_the_spellings_ops_are_drawn_by_no_other_family() -> None:
    for op in OPS:
        if op.name in SPELLINGS_ONLY:
            assert op.families == {"spellings"}, op
