"""A program that runs its own backward, and rounding a program amplifies: no false alarm."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import cgraph_doubles.faults  # noqa: F401  (registers the faulty_* backends)
from pytest_cgraph import ConfigurationError, EquivalenceError, check_equivalent
from pytest_cgraph.oracle.compare import TensorSnapshot, Tolerance
from pytest_cgraph.oracle.compiling import Backend
from pytest_cgraph.oracle.difference import Difference, Kind, Place, Role
from pytest_cgraph.oracle.engine import CheckSettings, run_check
from pytest_cgraph.oracle.observe import Observation
from pytest_cgraph.oracle.rounding import RandomDraws, explained_by_rounding, to_float64


def _batch() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    return torch.randn(6, 4, generator=g), torch.randn(6, 1, generator=g)


def sgd_step(model: nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor):
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    return loss  # not detached: its graph is freed


def test_a_training_step_that_returns_its_undetached_loss_passes():
    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    report = check_equivalent(sgd_step, model, opt, *_batch(), backend="aot_eager")
    assert report.tensor_outputs == 1


def test_a_lost_parameter_update_still_fails_a_training_step():
    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(EquivalenceError) as caught:
        check_equivalent(sgd_step, model, opt, *_batch(), backend="faulty_lost_input_mutation")
    assert caught.value.difference.kind.value in {"mutation", "value"}


@pytest.mark.parametrize(("retain_graph", "calls_per_side"), [(False, 1), (True, 2)])
def test_the_check_adds_its_backward_only_where_the_program_kept_its_graph(
    retain_graph, calls_per_side
):
    calls = []
    w = torch.ones(3, requires_grad=True)
    w.register_hook(lambda grad: calls.append(1))

    def step(w):
        loss = (w * w).sum()
        loss.backward(retain_graph=retain_graph)
        return loss

    check_equivalent(step, w, backend="eager", iters=2)
    # Two iterations on each of two sides: the program's backward, plus the
    # check's own only where the program's graph is still there.
    assert len(calls) == 2 * 2 * calls_per_side


def test_backward_true_on_a_program_that_ran_its_own_says_which_setting_to_use():
    def step(w):
        loss = (w * w).sum()
        loss.backward()
        return loss

    with pytest.raises(ConfigurationError, match="backward='auto'"):
        check_equivalent(step, torch.ones(3, requires_grad=True), backend="eager", backward=True)


class LinearThenBatchNorm(nn.Module):
    """A linear layer's bias before a batch norm: its true gradient is zero, its
    computed one rounding noise, which Adam turns into a step of ``±lr``."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 8)
        self.norm = nn.BatchNorm1d(8)
        self.out = nn.Linear(8, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(torch.relu(self.norm(self.lin(x))))


def adam_step(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    return loss


def _check_adam(float64_reference: bool) -> None:
    torch.manual_seed(0)
    settings = CheckSettings(
        backend=Backend.named("aot_eager"), float64_reference=float64_reference
    )
    run_check(adam_step, (LinearThenBatchNorm(), *_batch()), None, settings)


def test_adam_amplifying_rounding_is_no_difference_against_float64():
    _check_adam(float64_reference=True)


def test_without_the_float64_reference_adam_amplified_rounding_would_fail():
    # The same check as above, with the rule off: the false alarm it prevents.
    with pytest.raises(EquivalenceError, match=r"model\.lin\.bias"):
        _check_adam(float64_reference=False)


class WithDropout(LinearThenBatchNorm):
    """The same layers with a dropout before the last: a training step as written."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden = torch.relu(self.norm(self.lin(x)))
        return self.out(nn.functional.dropout(hidden, 0.3))


@pytest.mark.parametrize("float64_reference", [True, False])
def test_a_dropout_step_s_amplified_rounding_is_judged_against_eager_s_own_draws(
    float64_reference,
):
    # float64 would draw another mask; it is given eager's, so the float64
    # run is the exact answer to the step eager ran, and Adam's ±lr on the
    # bias is rounding. Without the reference the same step fails.
    torch.manual_seed(0)
    settings = CheckSettings(
        backend=Backend.named("aot_eager"), float64_reference=float64_reference
    )
    if float64_reference:
        run_check(adam_step, (WithDropout(), *_batch()), None, settings)
    else:
        with pytest.raises(EquivalenceError, match=r"model\.lin\.bias"):
            run_check(adam_step, (WithDropout(), *_batch()), None, settings)


def test_recorded_draws_are_played_back_converted_in_order():
    torch.manual_seed(0)
    with RandomDraws() as recorded:
        mask = torch.empty(5, dtype=torch.bfloat16).bernoulli_(0.5)
        offset = torch.rand(3)
    torch.manual_seed(1)  # another stream: playback must not depend on it
    with RandomDraws(recorded.draws) as played:
        wide_mask = torch.empty(5, dtype=torch.float64).bernoulli_(0.5)
        wide_offset = torch.rand(3, dtype=torch.float64)
    assert played.complete
    assert torch.equal(wide_mask, mask.double()) and torch.equal(wide_offset, offset.double())


def test_a_fused_dropout_is_carried_over_by_its_mask():
    # CUDA's dropout is native_dropout: its output is recomputed at float64
    # from the input and eager's mask.
    x = torch.randn(6)
    with RandomDraws() as recorded:
        _, mask = torch.native_dropout(x.bfloat16(), 0.5, True)
    with RandomDraws(recorded.draws) as played:
        wide, wide_mask = torch.native_dropout(x.double(), 0.5, True)
    assert played.complete
    assert torch.equal(wide_mask.double(), mask.double())
    assert torch.equal(wide, x.double() * mask.double() * 2)


def test_a_random_op_that_draws_nothing_is_no_draw():
    # CPU attention is tagged random whatever its dropout; without one it draws nothing.
    q = torch.randn(1, 2, 4, 8)
    with RandomDraws() as recorded:
        torch.nn.functional.scaled_dot_product_attention(q, q, q)
    assert recorded.complete and not recorded.draws


def test_draws_that_cannot_be_carried_over_leave_no_reference():
    with RandomDraws() as recorded:
        torch.rand(3)
    with RandomDraws(recorded.draws) as other_op:
        torch.randint(0, 10, (3,))
    with RandomDraws(recorded.draws) as other_shape:
        torch.rand(4)
    with RandomDraws(recorded.draws) as one_short:
        pass
    with RandomDraws(recorded.draws) as one_more:
        torch.rand(3), torch.rand(3)
    with RandomDraws() as mixed_in:  # rrelu's result is its input times the noise
        torch.nn.functional.rrelu(torch.randn(4), training=True)
    modes = (other_op, other_shape, one_short, one_more, mixed_in)
    assert not any(mode.complete for mode in modes)


def test_draws_from_a_run_that_is_not_eager_s_own_explain_nothing():
    import copy

    from pytest_cgraph.oracle import engine
    from pytest_cgraph.oracle.compiling import device_ops_for

    def double(x):
        return x * 2 + torch.rand(2)

    settings = CheckSettings(backend=Backend.named("eager"))
    reference = engine._Float64Reference(double, (torch.ones(2),), None, settings, None)
    ops = device_ops_for(None)
    place = Place(Role.OUTPUT, index=0)
    difference = Difference(Kind.VALUE, 1, place)
    assert reference._observation(1, ops) is not None
    eager = copy.deepcopy(reference._seen_at_precision[0])
    compiled = copy.deepcopy(eager)
    compiled.outputs = [TensorSnapshot.of(compiled.outputs[0].values + 1e-6)]
    assert reference.explains(difference, eager, compiled, ops)
    # Eager's own output of another run (other draws): the draws given to
    # float64 are not eager's, so nothing is measured against them.
    eager.outputs = [TensorSnapshot.of(eager.outputs[0].values + 0.5)]
    assert not reference.explains(difference, eager, compiled, ops)


def test_an_output_rounding_explained_is_no_stale_output_unless_it_changes_after():
    from pytest_cgraph.oracle import engine

    eager, compiled = torch.tensor([3.2109]), torch.tensor([3.2135])
    rounded = [{0: (TensorSnapshot.of(eager), TensorSnapshot.of(compiled))}]
    settings = CheckSettings(backend=Backend.named("eager"))
    retained = [([eager], [compiled])]
    difference, _, _ = engine._check_retained(retained, settings, False, rounded)
    assert difference is None
    # Without the explanation the same re-read is a stale output, as it is once
    # the compiled output changes after it was returned.
    unexplained, _, _ = engine._check_retained(retained, settings, False)
    compiled.add_(1)
    changed, _, _ = engine._check_retained(retained, settings, False, rounded)
    assert unexplained is not None and changed is not None
    assert changed.kind.value == "stale output"


def test_an_argument_returned_every_call_is_judged_by_its_last_explained_return():
    from pytest_cgraph.oracle import engine

    eager, compiled = torch.tensor([1.0]), torch.tensor([1.001])
    first = {0: (TensorSnapshot.of(eager), TensorSnapshot.of(compiled))}
    eager.add_(1), compiled.add_(1.002)  # written in place by the second call
    second = {0: (TensorSnapshot.of(eager), TensorSnapshot.of(compiled))}
    retained = [([eager], [compiled]), ([eager], [compiled])]
    settings = CheckSettings(backend=Backend.named("eager"))
    difference, _, _ = engine._check_retained(retained, settings, False, [first, second])
    assert difference is None
    difference, _, _ = engine._check_retained(retained, settings, False, [first, {}])
    assert difference is not None and difference.place.iteration == 1


def _observation(**places: list[float]) -> Observation:
    observation = Observation()
    observation.outputs = [TensorSnapshot.of(torch.tensor(places["output"]))]
    return observation


def test_rounding_explains_compiled_as_far_from_float64_as_eager():
    place = Place(Role.OUTPUT, index=0)
    exact = Observation()
    exact.outputs = [TensorSnapshot.of(torch.tensor([0.0, 0.0], dtype=torch.float64))]
    eager = _observation(output=[0.01, -0.008])
    near = _observation(output=[-0.012, 0.009])
    far = _observation(output=[0.05, 0.0])
    assert explained_by_rounding(place, eager, near, exact, Tolerance())
    assert not explained_by_rounding(place, eager, far, exact, Tolerance())


def test_aliased_or_view_arguments_have_no_float64_stand_in():
    base = torch.randn(4)
    assert not to_float64([base, base[:2]])
    assert not to_float64([base, base])
    alone = torch.randn(3, requires_grad=True)
    assert to_float64([alone, 2])
    assert alone.dtype == torch.float64 and alone.is_leaf and alone.requires_grad


def test_a_frozen_random_stream_still_fails_against_the_reference():
    # The float64 run is given eager's draws of each iteration: a compiled
    # side that replays the first iteration's numbers is far from it.
    with pytest.raises(EquivalenceError):
        check_equivalent(lambda x: x + torch.rand(3), torch.zeros(3), backend="faulty_frozen_rng")


def test_the_float64_reference_watches_every_cuda_generator_once_cuda_is_up(monkeypatch):
    from pytest_cgraph.oracle import rounding

    device_states = [torch.zeros(4, dtype=torch.uint8), torch.ones(4, dtype=torch.uint8)]
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_rng_state_all", lambda: device_states)
    states = rounding.generator_states()
    assert len(states) == 3 and states[1:] == device_states
