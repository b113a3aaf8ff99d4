"""The harness's CUDA-only handling, driven on CPU through the CUDA-graph trees double."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
import torch

from cgraph_doubles import cuda_trees
from cgraph_doubles.cuda_trees import CudaGraphTreesDouble, RecordingCudaOps
from pytest_cgraph import EquivalenceError, check_equivalent
from pytest_cgraph.checking.backends import resolve_backend
from pytest_cgraph.checking.runner import CheckSettings, run_check
from pytest_cgraph.oracle import compiling, engine
from pytest_cgraph.oracle.difference import OVERWRITTEN_OUTPUT_MESSAGE, Kind, Role
from pytest_cgraph.oracle.engine import check_source


def fresh_pair(k: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(k)
    return torch.randn(3, generator=g), torch.randn(3, generator=g)


def affine(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return x * y + 1


def test_replays_hand_out_one_cached_tensor_which_is_the_documented_overwrite() -> None:
    # As real trees do (pytorch/pytorch#122192): an output kept from the first
    # replay is the very tensor the last replay returned, holding its values
    # without the error: overwritten as documented, counted, not a failure.
    trees = CudaGraphTreesDouble()
    report = check_equivalent(affine, fresh_args=fresh_pair, backend=trees)
    assert (trees.recordings, trees.replays) == (1, 3)
    assert report.outputs_overwritten == 2  # the warm-up's and the recording's
    assert report.outputs_returned_again == 2  # replays 3 and 4, returned again by 5


def test_outputs_invalidated_by_the_next_call_are_the_documented_overwrite() -> None:
    trees = CudaGraphTreesDouble(cache_replay_outputs=False)
    report = check_equivalent(affine, fresh_args=fresh_pair, backend=trees)
    assert (trees.recordings, trees.replays) == (1, 3)
    # Outputs of calls 1 to 4 were overwritten by the next call and say so
    # when re-read; call 5's are the latest.
    assert report.outputs_overwritten == 4


def test_kept_outputs_the_same_across_calls_are_no_difference() -> None:
    # A persistent program returns the same values every call: the cached
    # tensor's latest values are the kept ones, so nothing is stale.
    trees = CudaGraphTreesDouble()
    x, y = fresh_pair(1)
    report = check_equivalent(affine, x, y, backend=trees)
    assert trees.replays == 3
    assert report.outputs_overwritten == 2  # the warm-up's and the recording's


def on_a_captured_pool(
    trees: CudaGraphTreesDouble, monkeypatch: pytest.MonkeyPatch
) -> CheckSettings:
    """Settings that check with ``trees`` as on CUDA: a device with a graph pool, and
    the graphs the double recorded counted as the trees' own records count them."""
    monkeypatch.setattr(engine, "captured_graph_count", lambda backend: trees.recordings)
    return CheckSettings(backend=resolve_backend(trees), ops=RecordingCudaOps())


def test_replays_rebuilding_outputs_over_the_pool_are_the_documented_overwrite(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Real trees rebuild some outputs on every replay: new tensor objects over
    # the memory the next replay writes again, without the error. An H100 run
    # (torch 2.11) met 54 such kept outputs, once reported as stale outputs.
    trees = CudaGraphTreesDouble(cache_replay_outputs=False, invalidate=False)
    report = run_check(affine, (), fresh_pair, on_a_captured_pool(trees, monkeypatch))
    assert trees.replays == 3
    # Call 2's (the recording's) and calls 3 and 4's (replays) outputs hold a
    # later call's values under tensors of their own; call 1's are the
    # warm-up's, in memory of their own, and call 5's the latest.
    assert report.outputs_returned_again == 3
    assert report.outputs_overwritten == 0


def test_a_rebuilt_output_is_excused_only_holding_a_later_calls_value() -> None:
    # Memory a later compiled output occupies is not enough: the kept output
    # must hold that output's value of a later call (eager's), as a replay
    # that rebuilt it over the pool would; anything else stays a stale output.
    pool = torch.zeros(3)
    kept, later = pool[:], pool.view(3)
    pool.copy_(torch.tensor([5.0, 6.0, 7.0]))
    settings = CheckSettings(backend=resolve_backend("eager"))
    now = engine.TensorSnapshot.of(kept)

    def retained(later_eager: torch.Tensor) -> list[tuple[list[Any], list[Any]]]:
        return [([torch.ones(3)], [kept]), ([later_eager], [later])]

    assert engine._rebuilt_over(kept, now, retained(torch.tensor([5.0, 6.0, 7.0])), 1, 0, settings)
    assert not engine._rebuilt_over(
        kept, now, retained(torch.tensor([1.0, 2.0, 3.0])), 1, 0, settings
    )
    elsewhere = [([torch.ones(3)], [kept]), ([torch.tensor([5.0, 6.0, 7.0])], [torch.zeros(3)])]
    assert not engine._rebuilt_over(kept, now, elsewhere, 1, 0, settings)


def test_on_cpu_a_kept_output_changed_under_a_later_outputs_memory_is_a_failure() -> None:
    # Without a graph pool (CPU: the trees skip capture) nothing documents the
    # overwrite: a compiled side handing out memory again is a stale output.
    with pytest.raises(EquivalenceError) as caught:
        check_equivalent(
            affine,
            fresh_args=fresh_pair,
            backend=CudaGraphTreesDouble(cache_replay_outputs=False, invalidate=False),
        )
    assert caught.value.difference.kind is Kind.STALE_OUTPUT


def test_silent_overwrite_of_retained_outputs_is_a_failure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Kept outputs changed in memory that no later output occupies: not the
    # documented overwrite, a stale output, on a device with a graph pool too.
    trees = CudaGraphTreesDouble(invalidate=False, scribble=True)
    settings = on_a_captured_pool(trees, monkeypatch)
    with pytest.raises(EquivalenceError) as caught:
        run_check(affine, (), fresh_pair, settings)
    assert caught.value.difference.kind is Kind.STALE_OUTPUT
    assert caught.value.difference.place.role is Role.RETAINED


def test_a_step_is_marked_before_every_compiled_call() -> None:
    trees = CudaGraphTreesDouble(cache_replay_outputs=False)
    check_equivalent(affine, fresh_args=fresh_pair, backend=trees)
    marks = trees.step_marks_seen
    assert len(marks) == 5
    assert all(later < earlier for earlier, later in itertools.pairwise(marks))


def test_input_mutations_survive_static_input_copies() -> None:
    def mutate(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        y.add_(3)
        return x * y

    trees = CudaGraphTreesDouble(cache_replay_outputs=False)
    check_equivalent(mutate, torch.randn(3), torch.randn(3), backend=trees)
    assert trees.replays == 3


def test_cuda_ops_seed_both_sides_alike_and_synchronize_before_reading() -> None:
    ops = RecordingCudaOps()
    trees = CudaGraphTreesDouble(cache_replay_outputs=False)
    settings = CheckSettings(backend=resolve_backend(trees), iters=4, ops=ops)
    run_check(affine, (), fresh_pair, settings)
    # eager then compiled, the same seed, a new seed each iteration
    assert ops.seeds == [1, 1, 2, 2, 3, 3, 4, 4]
    # after each call of each side, and once before re-reading retained outputs
    assert ops.synchronizations == 2 * 4 + 1


def test_other_errors_on_re_read_are_crashes(monkeypatch: pytest.MonkeyPatch) -> None:
    # Only the documented message means "overwritten"; any other error from
    # reading a retained output is a crash of the compiled side.
    monkeypatch.setattr(cuda_trees, "OVERWRITTEN", "some other storage problem")
    with pytest.raises(EquivalenceError) as caught:
        check_equivalent(affine, fresh_args=fresh_pair, backend=CudaGraphTreesDouble())
    assert caught.value.difference.kind == "crash"
    assert caught.value.difference.exception_type == "RuntimeError"


def test_cpu_seeding_where_only_the_cpu_has_a_generator_skips_the_lazy_device_seeds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def lazy_seeds(seed: int) -> None:
        raise AssertionError("torch.manual_seed would format stacks for absent devices")

    monkeypatch.setattr(compiling, "only_cpu_generators", lambda: True)
    monkeypatch.setattr(torch, "manual_seed", lazy_seeds)
    compiling.CpuOps().manual_seed(5)
    drawn = torch.rand(3)
    torch.default_generator.manual_seed(5)
    assert torch.equal(drawn, torch.rand(3))


def test_cpu_seeding_seeds_every_device_where_another_exists(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seeded: list[int] = []
    monkeypatch.setattr(compiling, "only_cpu_generators", lambda: False)
    monkeypatch.setattr(torch, "manual_seed", seeded.append)
    compiling.CpuOps().manual_seed(5)
    assert seeded == [5]


def test_this_machine_has_no_generator_but_the_cpu_and_asking_initialises_nothing() -> None:
    assert compiling.only_cpu_generators() is not torch.cuda.is_available()
    assert not torch.cuda.is_initialized()


FED_BACK = """
import torch


def program(a0):
    return (a0 + 2,)


def inputs(k):
    return (torch.ones(3),)


def advance(k, args, outputs):
    return (outputs[0],)
"""


def test_an_output_fed_back_into_the_next_call_meets_the_documented_overwrite() -> None:
    # The H100 run's feedback programs: the next call starts a new generation,
    # which invalidates the warm-up's output that is now its argument.
    with pytest.raises(EquivalenceError) as caught:
        check_source(FED_BACK, backend=resolve_backend(CudaGraphTreesDouble()))
    difference = caught.value.difference
    assert (difference.kind, difference.iteration) == (Kind.CRASH, 2)
    # The H100 run met it in both phases: wherever the stale argument is first read.
    assert difference.place.role is Role.COMPILED
    assert difference.place.name in ("compiled call", "reading outputs")
    assert OVERWRITTEN_OUTPUT_MESSAGE in (difference.message or "")


class GraphPoolPassThrough:
    """A backend that says it captures CUDA graphs and runs Dynamo's graph as is."""

    uses_cudagraphs = True
    __name__ = "graph_pool_pass_through"

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: object) -> object:
        return gm.forward


def requires_grad_pair(k: int) -> tuple[torch.Tensor, torch.Tensor]:
    x, y = fresh_pair(k)
    return x.requires_grad_(), y


def test_on_a_graph_pool_the_checks_own_grads_start_from_none_every_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # pytorch/pytorch#169545: a .grad a captured backward left in the pool is
    # invalidated by the next call; the check's own backward must not
    # accumulate into it. Grads are dropped on both sides after every call.
    dropped: list[int] = []
    real = engine._drop_check_grads

    def counting(flat: list[object]) -> None:
        dropped.append(sum(isinstance(v, torch.Tensor) and v.grad is not None for v in flat))
        real(flat)
        assert all(not isinstance(v, torch.Tensor) or v.grad is None for v in flat)

    monkeypatch.setattr(engine, "_drop_check_grads", counting)
    x, y = requires_grad_pair(1)
    settings = CheckSettings(backend=resolve_backend(GraphPoolPassThrough()), iters=3)
    run_check(affine, (x, y), None, settings)
    assert dropped == []  # CPU: grads are memory of their own and accumulate
    settings = CheckSettings(backend=settings.backend, iters=3, ops=RecordingCudaOps())
    run_check(affine, (x, y), None, settings)
    assert dropped == [1, 1] * 2  # x's grad, eager then compiled, between calls


def test_a_module_s_parameter_grads_are_dropped_too() -> None:
    lin = torch.nn.Linear(2, 1)
    lin(torch.ones(2)).sum().backward()
    leaf = torch.ones(2, requires_grad=True)
    leaf.sum().backward()
    engine._drop_check_grads([lin, leaf, 3.0])
    assert lin.weight.grad is None and lin.bias.grad is None and leaf.grad is None
