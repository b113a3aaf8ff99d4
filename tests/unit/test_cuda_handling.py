"""The harness's CUDA-only handling, driven on CPU through the CUDA-graph trees double."""

from __future__ import annotations

import itertools

import pytest
import torch

from cgraph_doubles import cuda_trees
from cgraph_doubles.cuda_trees import CudaGraphTreesDouble, RecordingCudaOps
from pytest_cgraph import EquivalenceError, check_equivalent
from pytest_cgraph.backends import resolve_backend
from pytest_cgraph.oracle import compiling
from pytest_cgraph.oracle.difference import Kind, Place, Role
from pytest_cgraph.oracle.engine import RETURNED_AGAIN, check_source
from pytest_cgraph.runner import CheckSettings, run_check


def fresh_pair(k: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(k)
    return torch.randn(3, generator=g), torch.randn(3, generator=g)


def affine(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return x * y + 1


def test_replays_hand_out_one_cached_tensor_so_a_kept_output_is_silently_stale() -> None:
    # As real trees do (pytorch/pytorch#122192): an output kept from the first
    # replay is the very tensor the last replay returned, holding its values.
    trees = CudaGraphTreesDouble()
    with pytest.raises(EquivalenceError) as caught:
        check_equivalent(affine, fresh_args=fresh_pair, backend=trees)
    difference = caught.value.difference
    assert (trees.recordings, trees.replays) == (1, 3)
    assert difference.kind is Kind.STALE_OUTPUT
    assert difference.place == Place(Role.RETAINED, index=0, iteration=3)
    assert difference.facet == RETURNED_AGAIN
    assert difference.signature == "stale_output-retained-returned_again"
    assert "returned this very tensor again at iteration 4" in (difference.detail or "")


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


def test_silent_overwrite_of_retained_outputs_is_a_failure() -> None:
    with pytest.raises(EquivalenceError) as caught:
        check_equivalent(
            affine,
            fresh_args=fresh_pair,
            backend=CudaGraphTreesDouble(cache_replay_outputs=False, invalidate=False),
        )
    assert caught.value.difference.kind is Kind.STALE_OUTPUT
    assert caught.value.difference.iteration == 2
    assert caught.value.difference.place == Place(Role.RETAINED, index=0, iteration=2)
    # Memory overwritten under a tensor of its own: not the cached-tensor mechanism.
    assert caught.value.difference.facet is None


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
    assert compiling.OVERWRITTEN_OUTPUT_MESSAGE in (difference.message or "")
