"""Differences the generator found in torch 2.13's compile path, kept as expected failures.

Each is the minimal program (as rendered source, the form the harness runs)
and the failure the oracle reports for it. They are strict expected failures
on torch 2.13: when a torch release fixes one, its test starts passing there
and fails the suite, so the fix is noticed and the entry retired. On other
torch versions they simply run.
"""

from __future__ import annotations

import pytest
import torch

from pytest_cgraph import EquivalenceError
from pytest_cgraph.runner import check_source

ON_TORCH_2_13 = torch.__version__.startswith("2.13.")

HEADER = "import torch\n\n\n"

# An input with internal overlap (an expanded tensor) filled in place. Eager
# allows fill_ on it; functionalization bans mutating tensors with internal
# overlap, so the compiled call raises. Same class as pytorch/pytorch#165409.
FILL_EXPANDED_INPUT = (
    HEADER
    + """\
def program(a0):
    a0.fill_(1.5)
    return (a0 + 0,)


def inputs(k):
    return (torch.zeros(1, 2).expand(2, 2),)
"""
)

# detach_() on an intermediate whose view is returned, beside a view of the
# input: under compile the intermediate is rebuilt as a view and detach_
# raises "Can't detach views in-place". Not found among torch's issues.
DETACH_BASE_OF_RETURNED_VIEW = (
    HEADER
    + """\
def program(a0):
    v0 = a0 @ a0.transpose(-1, -2)
    v1 = v0.select(1, 0)
    v2 = a0.as_strided((9,), (1,), a0.storage_offset())
    v0.detach_()
    return (v2, v1)


def inputs(k):
    return (torch.arange(9.0).reshape(1, 3, 3),)
"""
)

# A leaf that requires grad, mutated under no_grad and returned twice, with a
# second argument that is a view of it: AOTAutograd asserts
# "any_leaf=True != all_leaf=False". Not found among torch's issues.
NO_GRAD_MUTATION_OF_ALIASED_LEAF = (
    HEADER
    + """\
def program(a0, b1):
    with torch.no_grad():
        a0.mul_(0.9)
    return (a0, b1 * 1, a0)


def inputs(k):
    a0 = torch.ones(3, requires_grad=True)
    return (a0, a0.view(3))
"""
)

# ``.to`` that changes nothing returns its input itself in eager (documented);
# under compile the result is a new view of the same memory, so "the same
# tensor twice" becomes "two aliasing tensors". Related: pytorch/pytorch#191844.
TO_NOOP_IDENTITY = (
    HEADER
    + """\
def program(a0):
    v0 = a0.t()
    return (v0, v0.to("cpu", non_blocking=True))


def inputs(k):
    return (torch.ones(2, 2),)
"""
)

# The cudagraphs backend's partitioner, with Inductor's fallback_random=True
# (which the harness sets so random ops compare with eager), asserts
# "Expected native_dropout to be a tensor" on this chain of random ops with
# a parameter. aot_eager and aot_eager_decomp_partition compile it. Related:
# pytorch/pytorch#135459.
PARTITIONER_DROPOUT_WITH_FALLBACK_RANDOM = (
    HEADER
    + """\
def program(a0, p1):
    v0 = torch.sin(p1)
    v1 = v0 + torch.rand_like(v0)
    v2 = torch.zeros_like(v1)
    v3 = v2 + torch.rand_like(v2)
    v4 = v3 + torch.rand_like(v3)
    v5 = torch.nn.functional.dropout(v4, 0.5)
    return (v1,)


def inputs(k):
    return (torch.zeros(1, dtype=torch.long), torch.nn.Parameter(torch.ones(1)))
"""
)

# set_() of a view of an input onto itself, then an in-place write: eager
# writes through to the input; compiled raises "cannot mutate tensors with
# frozen storage". Related: pytorch/pytorch#127571 (export), #197399.
SET_VIEW_ONTO_ITSELF_THEN_WRITE = (
    HEADER
    + """\
def program(a0):
    v0 = a0[1]
    v0.set_(v0)
    v0.add_(1)
    return (a0,)


def inputs(k):
    return (torch.zeros(2, 2),)
"""
)

# set_() of a fresh clone onto its input: eager returns a new tensor object
# sharing the input's storage; compiled returns the input object itself, so
# a later metadata change (t_, resize_) would hit the caller's tensor.
SET_CLONE_ONTO_INPUT_IDENTITY = (
    HEADER
    + """\
def program(a0):
    v0 = a0.clone()
    v0.set_(a0)
    return (v0,)


def inputs(k):
    return (torch.ones(2),)
"""
)

# A gradient hook registered on a view of a leaf inside the compiled region
# is dropped: eager doubles the leaf's gradient, compiled does not.
HOOK_ON_VIEW_OF_LEAF = (
    HEADER
    + """\
def program(a0):
    v0 = a0.t()
    v0.register_hook(lambda grad: grad * 2)
    return (v0,)


def inputs(k):
    return (torch.ones(1, requires_grad=True),)
"""
)

# The cudagraphs backend gives a leaf that was only mutated under no_grad
# (and feeds no output) a zero gradient; eager leaves its .grad None.
# aot_eager agrees with eager: specific to the CUDA-graph backend's path.
NO_GRAD_MUTATED_LEAF_GETS_ZERO_GRAD = (
    HEADER
    + """\
def program(a0, p1):
    with torch.no_grad():
        a0.mul_(0.9)
    return (p1 * 2,)


def inputs(k):
    return (torch.ones(2, requires_grad=True), torch.nn.Parameter(torch.ones(2)))
"""
)

CASES = [
    pytest.param(FILL_EXPANDED_INPUT, "crash", id="fill_expanded_input"),
    pytest.param(DETACH_BASE_OF_RETURNED_VIEW, "crash", id="detach_base_of_returned_view"),
    pytest.param(NO_GRAD_MUTATION_OF_ALIASED_LEAF, "crash", id="no_grad_mutation_of_aliased_leaf"),
    pytest.param(TO_NOOP_IDENTITY, "aliasing", id="to_noop_identity"),
    pytest.param(SET_VIEW_ONTO_ITSELF_THEN_WRITE, "crash", id="set_view_onto_itself_then_write"),
    pytest.param(SET_CLONE_ONTO_INPUT_IDENTITY, "aliasing", id="set_clone_onto_input_identity"),
    pytest.param(HOOK_ON_VIEW_OF_LEAF, "grad", id="hook_on_view_of_leaf"),
]

CUDAGRAPHS_ONLY = [
    pytest.param(NO_GRAD_MUTATED_LEAF_GETS_ZERO_GRAD, "grad", id="no_grad_mutated_leaf_zero_grad"),
    pytest.param(
        PARTITIONER_DROPOUT_WITH_FALLBACK_RANDOM, "crash", id="partitioner_dropout_fallback_random"
    ),
]


@pytest.mark.skipif(not ON_TORCH_2_13, reason="recorded on torch 2.13")
@pytest.mark.parametrize(("source", "kind"), CASES)
@pytest.mark.parametrize("backend", ["aot_eager", "cudagraphs"])
def test_known_difference_is_reported_with_its_kind(source: str, kind: str, backend: str) -> None:
    with pytest.raises(EquivalenceError) as caught:
        check_source(source, backend=backend, iters=2)
    assert caught.value.difference.kind == kind


@pytest.mark.xfail(ON_TORCH_2_13, reason="torch 2.13 compile differs from eager", strict=True)
@pytest.mark.parametrize(("source", "kind"), CASES)
def test_known_difference_is_fixed(source: str, kind: str) -> None:
    check_source(source, backend="aot_eager", iters=2)


@pytest.mark.skipif(not ON_TORCH_2_13, reason="recorded on torch 2.13")
@pytest.mark.parametrize(("source", "kind"), CUDAGRAPHS_ONLY)
def test_cudagraphs_only_difference_is_reported(source: str, kind: str) -> None:
    with pytest.raises(EquivalenceError) as caught:
        check_source(source, backend="cudagraphs", iters=2)
    assert caught.value.difference.kind == kind
    check_source(source, backend="aot_eager", iters=2)  # the layer below is fine


@pytest.mark.xfail(ON_TORCH_2_13, reason="torch 2.13 compile differs from eager", strict=True)
@pytest.mark.parametrize(("source", "kind"), CUDAGRAPHS_ONLY)
def test_cudagraphs_only_difference_is_fixed(source: str, kind: str) -> None:
    check_source(source, backend="cudagraphs", iters=2)


HOOK_ON_REFRESHED_VIEW = """
import torch
a0 = torch.randn(2, requires_grad=True)
a1 = a0[:1]
with torch.no_grad():
    a0.mul_(0.9)
a1.register_hook(lambda grad: grad)
print("survived")
"""


@pytest.mark.xfail(ON_TORCH_2_13, reason="torch 2.13 eager segfaults", strict=True)
def test_hook_on_a_view_of_a_leaf_written_in_place_does_not_crash_eager() -> None:
    # Found by a campaign whose xdist worker died: the in-flight record kept
    # the program. Eager torch itself segfaults (pytorch/pytorch#196459), so
    # it runs in a subprocess; the generator steps off views before a hook.
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-c", HOOK_ON_REFRESHED_VIEW], capture_output=True)
    assert run.returncode == 0, run.returncode
