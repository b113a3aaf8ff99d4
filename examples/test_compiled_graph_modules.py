"""The modules of PyTorch's ``test/lazy/test_extract_compiled_graph.py``, as equivalence checks.

The original reuses one compiled graph for fresh random arguments; here
``fresh_args`` gives every iteration new tensors, so a compiled graph that
kept record-time inputs or outputs would show.
"""

from __future__ import annotations

import torch


def fresh(*shapes):
    def arguments(k):
        g = torch.Generator().manual_seed(k)
        return tuple(torch.randn(shape, generator=g) for shape in shapes)

    return arguments


def test_sub(cgraph):
    cgraph.check(lambda a, b: a - b, fresh_args=fresh((2, 3), (2, 3)))


def test_const_scale(cgraph):
    cgraph.check(lambda a: a * 2, fresh_args=fresh((2, 3)))


def test_addcmul(cgraph):
    cgraph.check(lambda a, b, c: torch.addcmul(a, b, c, value=5), fresh_args=fresh(*[(2, 3)] * 3))


def test_return_multi(cgraph):
    cgraph.check(lambda a, b: (b + 1, a - 1), fresh_args=fresh((2, 3), (2, 3)))


def test_return_dup_tensor(cgraph):
    # The same tensor twice in the returned tuple must come back as one
    # tensor twice, not as two copies.
    def model(a, b):
        c = a + b
        return a - b, c, a + 1, c

    cgraph.check(model, fresh_args=fresh((2, 3), (2, 3)))


def test_inplace_update(cgraph):
    def model(a, b):
        a.sub_(b)
        return b - 1, b + 1

    cgraph.check(model, fresh_args=fresh((2, 3), (2, 3)))
