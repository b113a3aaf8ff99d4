"""The layer ladder names a layer only when every rung below it agrees with eager."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
import torch
from torch._dynamo.backends.registry import register_backend

from pytest_cgraph.checking.runner import check_source
from pytest_cgraph.errors import EquivalenceError
from pytest_cgraph.failures import Case, Failure
from pytest_cgraph.oracle import driver, ladder
from pytest_cgraph.oracle.difference import Difference, Kind, Place, Role
from pytest_cgraph.recording.repro import (
    first_diverging_layer,
    locate_layer,
    make_repro,
    masked_rungs,
)
from pytest_cgraph.registry.entries import Registry, baseline_dir, program_ops
from pytest_cgraph.registry.judge import Judge

#: A rung that crashes while compiling any program: a lower layer with a bug
#: of its own, whatever the failure being located is.
CRASHING = "ladder_test_crashes_every_program"


def _crash_every_program(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable:
    raise RuntimeError("this rung crashes on every program")


if CRASHING not in torch._dynamo.list_backends(exclude_tags=()):
    register_backend(_crash_every_program, name=CRASHING)


# The cudagraphs backend gives a leaf only written under no_grad a zero grad
# (eager leaves it None); eager, aot_eager and the default partitioner agree.
ZERO_GRAD = """
import torch


def program(a0, p1):
    with torch.no_grad():
        a0.mul_(0.9)
    return (p1 * 2,)


def inputs(k):
    return (torch.ones(2, requires_grad=True), torch.nn.Parameter(torch.ones(2)))
"""

# dropout(training=False) returns its input in eager and a copy after
# AOTAutograd's decomposition: an aliasing difference from aot_eager up.
# The same tensor twice in a _foreach_ list is written once under AOTAutograd
# (torch 2.13 and 2.14).
FOREACH_DUPLICATE = """
import torch


def program(a0):
    torch._foreach_add_([a0, a0], 1.5)
    return (a0,)


def inputs(k):
    return (torch.zeros(1),)
"""

# The default partitioner (which cudagraphs uses) asserts "Expected
# native_dropout to be a tensor" on this chain of random ops; aot_eager's
# min-cut partitioner compiles it.
PARTITIONER_ASSERT = """
import torch


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


def failing(source: str, backend: str) -> Failure:
    """The failure ``source`` shows on ``backend``, as the campaign would record it."""
    with pytest.raises(EquivalenceError) as raised:
        check_source(source, backend=backend)
    return Failure(
        Case(source, backend, "cpu", 5, family="ladder", size=50), raised.value.difference
    )


@pytest.fixture
def crashing_rung_below_cudagraphs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The cudagraphs ladder with a rung that crashes on every program below cudagraphs."""
    rungs = ["eager", CRASHING, "cudagraphs"]
    monkeypatch.setattr(ladder, "rungs_for", lambda backend, device: list(rungs))
    # The bug report's sentence on the layer names the rungs too.
    monkeypatch.setattr(driver, "rungs_for", ladder.rungs_for, raising=False)
    return rungs


def test_a_lower_rung_that_crashes_keeps_a_grad_finding_from_being_cudagraph_specific(
    tmp_path: Path, crashing_rung_below_cudagraphs: list[str]
) -> None:
    failure = failing(ZERO_GRAD, "cudagraphs")
    assert failure.signature == "grad-grad-presence"
    repro = make_repro(failure, tmp_path).repro
    assert repro is not None and repro.verified, repro
    assert repro.layer is None and not repro.cudagraph_specific
    assert repro.path is not None and Path(repro.path).name == "grad-grad-presence.py"
    head = Path(repro.path).read_text().split("\n\n", 1)[0]
    assert "# layer: none" in head
    assert (
        f"# first diverging layer: not located: {CRASHING}: fails differently "
        "(crash-compiled_call-RuntimeError-this_rung_crashes_on_every_program_"
    ) in head
    assert "the layer cannot be told" in head
    assert "CUDA-graph path specific: unknown" in head
    assert "not located" in repro.detail


def test_the_climb_stops_at_a_rung_that_fails_differently(
    crashing_rung_below_cudagraphs: list[str],
) -> None:
    failure = failing(ZERO_GRAD, "cudagraphs")
    rungs = ladder.climb(ZERO_GRAD, "cudagraphs", None, 5, like=failure.difference)
    assert [rung.name for rung in rungs] == ["eager", CRASHING]
    assert rungs[-1].standing(failure.difference) is ladder.Standing.OTHER
    location = ladder.locate(rungs, failure.difference)
    assert location.layer is None and not location.cudagraph_specific
    assert location.untold_by == rungs[-1]


# An input written with a value that needs grad: AOTAutograd's write-back
# fails aot_eager's backward (a version-counter crash); the cudagraphs
# backend runs it and shows autograd.grad's one-node bug (p1 gains a grad).
MASKED_GRAD_BUG = """
import torch


def program(a0, p1, p2):
    v0 = p2 * 2
    a0.mul_(v0)
    torch.autograd.grad(p1.sum(), p2, retain_graph=True, allow_unused=True)
    return (v0,)


def inputs(k):
    return (torch.ones(2), torch.nn.Parameter(torch.ones(3)), torch.nn.Parameter(torch.ones(2)))
"""


def test_a_judge_knows_a_bug_a_lower_rung_masks_by_the_rung_and_its_calls() -> None:
    failure = failing(MASKED_GRAD_BUG, "cudagraphs")
    assert failure.signature == "grad-grad-presence"
    # The layer stays untold (a repro file says so); the masking rung is asked apart.
    assert first_diverging_layer(failure.case, failure.difference) is None
    # The write-back crash at aot_eager masks it: it is there or above.
    assert masked_rungs(failure.case, failure.difference) == (
        "aot_eager",
        "aot_eager_default_partitioner",
        "cudagraphs",
    )
    shipped = baseline_dir(torch.__version__)
    if shipped is None:
        pytest.skip(f"no shipped baseline for torch {torch.__version__}")
    registry = Registry.load([shipped])
    unaided = Judge(registry, first_diverging_layer)
    assert unaided.known(failure.case, failure.difference) is None
    judge = Judge(registry, first_diverging_layer, masked_at=masked_rungs)
    known = judge.known(failure.case, failure.difference)
    assert known is not None and known.bug == "one-node-unused-outputs"
    # The rung alone does not claim it: a program without the bug's calls is new.
    without_grad = failure.case.source.replace(
        "torch.autograd.grad(p1.sum(), p2, retain_graph=True, allow_unused=True)", "p1.sum()"
    )
    ops = program_ops(without_grad)
    assert registry.match(failure.difference, lambda: "aot_eager", ops) is None


#: A factory method's requires_grad=True, lost by AOTAutograd (aot_eager), in a
#: program whose .grad read of a non-leaf Dynamo alone gets wrong (eager rung).
MASKED_ABOVE_EAGER = """
import torch


def program(a0):
    v0 = a0.new_full((2,), 1, requires_grad=True)
    v1 = v0 * 1
    v1 = v1 * (2 if v1.grad is None else 3)
    return (v1.sum(0),)


def inputs(k):
    return (torch.ones(2),)
"""


def test_a_judge_knows_a_bug_above_the_masking_rung_by_its_calls() -> None:
    failure = failing(MASKED_ABOVE_EAGER, "aot_eager")
    assert failure.signature == "metadata-output-requires_grad"
    assert first_diverging_layer(failure.case, failure.difference) is None
    # Dynamo's own rung fails otherwise: the failure is there or above, up to aot_eager.
    assert masked_rungs(failure.case, failure.difference) == ("eager", "aot_eager")
    shipped = baseline_dir(torch.__version__)
    if shipped is None:
        pytest.skip(f"no shipped baseline for torch {torch.__version__}")
    registry = Registry.load([shipped])
    judge = Judge(registry, first_diverging_layer, masked_at=masked_rungs)
    known = judge.known(failure.case, failure.difference)
    assert known is not None and known.bug == "tensor-new-factory-requires-grad"
    # Without the factory call no bug of these calls is registered there: new.
    plain = failure.case.source.replace("a0.new_full((2,), 1, requires_grad=True)", "a0 * 1")
    assert registry.match(failure.difference, lambda: "aot_eager", program_ops(plain)) is None


@pytest.mark.parametrize(
    ("backend", "device", "rungs"),
    [
        ("cudagraphs", "cpu", ("aot_eager", "aot_eager_default_partitioner", "cudagraphs")),
        # Not a rung: up to the ladder's top, less the CUDA-graph rung it never reaches.
        ("my_backend", "cpu", ("aot_eager", "aot_eager_default_partitioner")),
        (
            "max-autotune-no-cudagraphs",
            "cuda",
            ("aot_eager", "aot_eager_decomp_partition", "inductor"),
        ),
        (
            "reduce-overhead",
            "cuda",
            ("aot_eager", "aot_eager_decomp_partition", "inductor", "reduce-overhead"),
        ),
        ("aot_eager", "cpu", ("aot_eager",)),
    ],
)
def test_the_rungs_a_masked_failure_may_lie_at_end_where_its_backend_would(
    monkeypatch: pytest.MonkeyPatch, backend: str, device: str, rungs: tuple[str, ...]
) -> None:
    from pytest_cgraph.recording import repro

    masked = ladder.Location(None, False, untold_by=ladder.Rung("aot_eager", invalid="x"))
    monkeypatch.setattr(repro, "_climbed", lambda case, difference: masked)
    case = Case("", backend, device, 5, family="ladder", size=1)
    difference = Difference(Kind.GRAD, 1, Place(Role.GRAD, name="a0"))
    assert masked_rungs(case, difference) == rungs
    unmasked = ladder.Location(None, False)
    monkeypatch.setattr(repro, "_climbed", lambda case, difference: unmasked)
    assert masked_rungs(case, difference) == ()


def test_the_bug_report_says_which_rung_fails_differently(
    crashing_rung_below_cudagraphs: list[str],
) -> None:
    case = driver.ReproCase(ZERO_GRAD, "cudagraphs", signature="grad-grad-presence")
    report = driver.issue_report(case)
    assert f"| `{CRASHING}` | fails differently (crash-compiled_call-RuntimeError-this_rung" in (
        report
    )
    assert "| `cudagraphs` | grad difference at iteration 1" in report
    assert f"First diverging layer: not located: {CRASHING}: fails differently" in report
    assert "CUDA-graph path specific: unknown." in report


@pytest.mark.parametrize(
    ("source", "layer", "specific"),
    [
        (FOREACH_DUPLICATE, "aot_eager", False),
        (PARTITIONER_ASSERT, "aot_eager_default_partitioner", False),
        (ZERO_GRAD, "cudagraphs", True),
    ],
    ids=["aot_eager", "default_partitioner", "cudagraphs"],
)
def test_the_ladder_names_the_layer_where_every_rung_below_agrees(
    source: str, layer: str, specific: bool
) -> None:
    failure = failing(source, "cudagraphs")
    location = locate_layer(failure.case, failure.difference)
    assert (location[0], location[1]) == (layer, specific)  # [0]: what the hunt's layer_of reads


def test_the_cudagraphs_ladder_isolates_the_default_partitioner() -> None:
    assert ladder.rungs_for("cudagraphs", "cpu") == [
        "eager",
        "aot_eager",
        "aot_eager_default_partitioner",
        "cudagraphs",
    ]
    assert ladder.rungs_for("inductor", "cuda:0") == [
        "eager",
        "aot_eager",
        "aot_eager_decomp_partition",
        "inductor",
        "reduce-overhead",
    ]


def _value(iteration: int = 1) -> Difference:
    return Difference(Kind.VALUE, iteration, Place(Role.OUTPUT, index=0))


def _crash(message: str) -> Difference:
    place = Place(Role.COMPILED, name="call")
    return Difference(Kind.CRASH, 1, place, exception_type="RuntimeError", message=message)


def test_a_crash_with_another_message_is_another_failure() -> None:
    like = _crash("tensor a is at version 1; expected version 0")
    rungs = [
        ladder.Rung("eager"),
        ladder.Rung("aot_eager", _crash("unsupported operation")),
        ladder.Rung("x", like),
    ]
    location = ladder.locate(rungs, like)
    assert location == ladder.Location(None, False, untold_by=rungs[1])
    assert location.summary().startswith("not located (aot_eager: fails differently (crash-")
    # The same message behind torch's compile wrapper is the same failure.
    wrapped = Difference(
        Kind.CRASH,
        1,
        Place(Role.COMPILED, name="call"),
        exception_type="BackendCompilerFailed.RuntimeError",
        message=like.message,
    )
    assert ladder.locate(
        [ladder.Rung("eager"), ladder.Rung("aot_eager", wrapped)], like
    ) == ladder.Location("aot_eager")


def test_a_rung_whose_eager_turned_invalid_agrees_only_up_to_that_iteration() -> None:
    later = ladder.Rung("eager", invalid="RuntimeError: x", invalid_iteration=3)
    assert later.standing(_value(2)) is ladder.Standing.AGREES
    assert ladder.locate(
        [later, ladder.Rung("cudagraphs", _value(2))], _value(2)
    ) == ladder.Location("cudagraphs", True)
    # Stopped at the failure's iteration: it never saw it, the layer cannot be told.
    assert later.standing(_value(3)) is ladder.Standing.OTHER
    assert (
        ladder.locate([later, ladder.Rung("cudagraphs", _value(3))], _value(3)).untold_by == later
    )
    assert "at iteration 3, so it never compared iteration 3" in later.verdict(_value(3))


def test_a_rung_failing_differently_only_after_the_failure_s_iteration_agrees() -> None:
    """Eager's rung misses a hook registered after call 1 (a value difference from
    call 2 on); the failure, at call 1, is aot_eager's: that rung agreed through it."""
    later = ladder.Rung("eager", _value(2))
    aliasing = Difference(Kind.ALIASING, 1, Place(Role.ALIASING, index=1))
    assert later.standing(aliasing) is ladder.Standing.AGREES
    assert ladder.locate([later, ladder.Rung("aot_eager", aliasing)], aliasing) == (
        ladder.Location("aot_eager")
    )
    assert later.verdict(aliasing).startswith(
        "agrees with eager up to iteration 1, the failure's; then fails differently (value-"
    )
    # A failure at the rung's iteration, or after it: another difference may hide it.
    for iteration in (2, 3):
        same_time = Difference(Kind.ALIASING, iteration, Place(Role.ALIASING, index=1))
        assert later.standing(same_time) is ladder.Standing.OTHER
    # A hang or a dead process names no iteration: nothing is known to agree.
    hang = Difference(Kind.TIMEOUT, 0, Place(Role.PROGRAM))
    assert later.standing(hang) is ladder.Standing.OTHER


def test_no_rung_showing_the_failure_names_no_layer_and_says_so() -> None:
    location = ladder.locate([ladder.Rung("eager"), ladder.Rung("aot_eager")], _value())
    assert location == ladder.Location(None)
    assert location.summary() == "only the backend under test"
    assert location.describe(["eager", "aot_eager"]) == (
        "none below the backend itself (ladder eager -> aot_eager); CUDA-graph path specific: no"
    )
