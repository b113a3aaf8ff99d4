"""One object graph per side: whatever refers to a copied argument is copied with it.

A scheduler steps its side's optimizer, a scaler scales its side's loss, an EMA
helper averages its side's model, a hook or a closure reaches its side's
objects; the caller's objects are never changed by a check. What cannot be
copied with its graph fails the check in one line that names it, unless all
it holds is its own: that is shared, as before. The float64 run that tells
rounding from a difference converts what copied objects hold, and a check
walks an argument's graph once, however often it observes it.
"""

from __future__ import annotations

import functools
import threading
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

import cgraph_doubles.faults  # noqa: F401  (registers the faulty_* backends)
from cgraph_doubles.schedules import ScheduleLostWhenCompiled, training
from pytest_cgraph import ConfigurationError, EquivalenceError, check_equivalent
from pytest_cgraph.oracle.difference import Kind
from pytest_cgraph.oracle.observe import observed_arguments
from pytest_cgraph.oracle.rounding import to_float64
from pytest_cgraph.oracle.sides import clone_arguments, following_copies

LR = 0.1
BATCH = torch.ones(3, 2)


def halving(iters: int) -> list[float]:
    """What a StepLR(step_size=1, gamma=0.5) leaves the learning rate at after each step."""
    return [LR * 0.5**k for k in range(1, iters + 1)]


def per_side(seen: list[tuple[bool, Any]]) -> tuple[list[Any], list[Any]]:
    """What each side recorded: eager's, then the compiled side's."""
    return [v for compiled, v in seen if not compiled], [v for compiled, v in seen if compiled]


def scheduled_step(seen: list[tuple[bool, Any]]) -> Callable[..., torch.Tensor]:
    """A training step that steps its scheduler and records the learning rate it left."""

    def step(
        net: nn.Module, opt: torch.optim.Optimizer, sched: Any, x: torch.Tensor
    ) -> torch.Tensor:
        loss = net(x).sum()
        loss.backward()
        opt.step()
        opt.zero_grad()
        sched.step()
        seen.append((torch.compiler.is_compiling(), opt.param_groups[0]["lr"]))
        return loss.detach()

    return step


def test_a_scheduler_is_copied_with_the_optimizer_it_steps() -> None:
    net, opt = training()
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    _, opt_copy, sched_copy = clone_arguments([net, opt, sched])
    assert sched_copy is not sched and sched_copy.optimizer is opt_copy
    # The scheduler's patch of the optimizer's step tells the copy's own
    # scheduler that the copy stepped (else it warns on its first step).
    opt_copy.step()
    sched_copy.step()
    assert opt_copy.param_groups[0]["lr"] == LR / 2 and opt_copy._opt_called
    assert (opt.param_groups[0]["lr"], sched.last_epoch) == (LR, 0)
    assert not getattr(opt, "_opt_called", False)


def test_each_side_follows_its_own_schedule_and_the_caller_s_is_untouched() -> None:
    net, opt = training()
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    weight = net.weight.detach().clone()
    seen: list[tuple[bool, Any]] = []
    check_equivalent(scheduled_step(seen), net, opt, sched, BATCH, backend="eager", iters=4)
    assert per_side(seen) == (halving(4), halving(4))
    assert (opt.param_groups[0]["lr"], sched.last_epoch) == (LR, 0)
    assert torch.equal(net.weight, weight) and net.weight.grad is None


def test_an_optimizer_keeps_its_hooks_on_each_side() -> None:
    # A deep copy keeps what an optimizer pickles (settings and state): its
    # step hooks were left behind, and no side called them.
    net, opt = training()
    steps: list[int] = []
    opt.register_step_post_hook(lambda optimizer, args, kwargs: steps.append(1))
    check_equivalent(
        scheduled_step([]),
        net,
        opt,
        torch.optim.lr_scheduler.StepLR(opt, step_size=1),
        BATCH,
        backend="eager",
        iters=2,
    )
    assert len(steps) == 4  # two calls on each side


@pytest.mark.parametrize("iters", [1, 3])
def test_a_schedule_whose_writes_the_compiled_side_loses_is_caught(iters: int) -> None:
    # Its learning rate is compared after each call: with one call, nothing
    # else could show it (the parameters move by the next call's step).
    net, opt = training()
    sched = ScheduleLostWhenCompiled(opt, step_size=1, gamma=0.5)
    seen: list[tuple[bool, Any]] = []
    with pytest.raises(EquivalenceError) as raised:
        check_equivalent(scheduled_step(seen), net, opt, sched, BATCH, backend="eager", iters=iters)
    difference = raised.value.difference
    assert (difference.kind, difference.iteration) == (Kind.MUTATION, 1)
    assert str(difference.place) == "argument opt.param_groups[0].lr"
    eager, compiled = per_side(seen)  # eager runs again alone once compiled differs
    assert (set(eager), compiled) == ({LR / 2}, [LR])
    assert (opt.param_groups[0]["lr"], sched.last_epoch) == (LR, 0)


def test_a_grad_scaler_is_copied_per_side() -> None:
    net, opt = training()
    scaler = torch.amp.GradScaler("cpu", init_scale=4.0, growth_interval=1)
    seen: list[tuple[bool, Any]] = []

    def step(
        net: nn.Module, opt: torch.optim.Optimizer, scaler: Any, x: torch.Tensor
    ) -> torch.Tensor:
        loss = net(x).sum()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()
        seen.append((torch.compiler.is_compiling(), scaler.get_scale()))
        return loss.detach()

    weight = net.weight.detach().clone()
    check_equivalent(step, net, opt, scaler, BATCH, backend="eager", iters=3)
    # Each side's scale doubles from the caller's after each of its own steps.
    assert per_side(seen) == ([8.0, 16.0, 32.0], [8.0, 16.0, 32.0])
    assert scaler.get_scale() == 4.0 and torch.equal(net.weight, weight)


class EMA:
    """An exponential moving average of a model's parameters, as training loops keep one."""

    def __init__(self, model: nn.Module, decay: float = 0.5) -> None:
        self.model = model
        self.decay = decay
        self.shadow = [p.detach().clone() for p in model.parameters()]

    def update(self) -> None:
        with torch.no_grad():
            for average, parameter in zip(self.shadow, self.model.parameters(), strict=True):
                average.mul_(self.decay).add_(parameter, alpha=1 - self.decay)


def test_an_ema_helper_averages_its_own_side_s_model() -> None:
    net, opt = training()
    ema = EMA(net)
    shadow = [average.clone() for average in ema.shadow]
    weight = net.weight.detach().clone()
    seen: list[tuple[bool, Any]] = []

    def step(
        net: nn.Module, opt: torch.optim.Optimizer, ema: EMA, x: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        loss = net(x).sum()
        loss.backward()
        opt.step()
        opt.zero_grad()
        ema.update()
        seen.append((torch.compiler.is_compiling(), ema.model is net))
        return loss.detach(), ema.shadow[0] * 1

    check_equivalent(step, net, opt, ema, BATCH, backend="eager", iters=3)
    assert per_side(seen) == ([True] * 3, [True] * 3)
    assert ema.model is net and torch.equal(net.weight, weight)
    assert all(torch.equal(a, b) for a, b in zip(ema.shadow, shadow, strict=True))


class Trainer:
    """A plain object that holds a model and its optimizer; only it is passed."""

    def __init__(self) -> None:
        self.net, self.opt = training()


def decay_held_weights(trainer: Trainer, x: torch.Tensor) -> torch.Tensor:
    out = trainer.net(x)
    with torch.no_grad():
        for parameter in trainer.net.parameters():
            parameter.mul_(0.9)
    return out


def test_an_object_holding_a_model_is_copied_and_its_model_compared_by_path() -> None:
    trainer = Trainer()
    weight = trainer.net.weight.detach().clone()
    check_equivalent(decay_held_weights, trainer, BATCH, backend="aot_eager", iters=4)
    assert torch.equal(trainer.net.weight, weight)
    # A lost update of the model it holds is named by where it is held.
    with pytest.raises(EquivalenceError) as raised:
        check_equivalent(decay_held_weights, trainer, BATCH, backend="faulty_lost_input_mutation")
    difference = raised.value.difference
    assert (difference.kind, str(difference.place)) == (
        Kind.MUTATION,
        "argument trainer.net.weight",
    )
    assert torch.equal(trainer.net.weight, weight)


def test_what_an_argument_already_shows_is_not_named_again_through_an_object() -> None:
    trainer = Trainer()
    names = [name for name, _ in observed_arguments([trainer.net, trainer], ["net", "trainer"])]
    settings = ("lr", "momentum", "dampening", "weight_decay")
    assert names == [
        "net.weight",
        "net.bias",
        *(f"trainer.opt.param_groups[0].{setting}" for setting in settings),
    ]


class Slotted:
    """Holds a model in a slot, not in attributes."""

    __slots__ = ("net",)

    def __init__(self, net: nn.Module) -> None:
        self.net = net


def test_an_object_holding_a_model_in_a_slot_is_copied_with_it() -> None:
    net, _ = training()
    held = Slotted(net)
    net_copy, held_copy = clone_arguments([net, held])
    assert held_copy is not held and held_copy.net is net_copy


class Stats:
    """Statistics a forward hook gathers into a tensor."""

    def __init__(self) -> None:
        self.total = torch.zeros(())


@pytest.mark.parametrize("passed", [True, False], ids=["passed", "held-by-the-hook-only"])
def test_a_module_hook_closing_over_an_object_writes_its_side_s_copy(passed: bool) -> None:
    net, _ = training()
    stats = Stats()
    net.register_forward_hook(lambda module, args, out: stats.total.add_(out.detach().sum()))

    def forward(net: nn.Module, stats: Stats, x: torch.Tensor) -> torch.Tensor:
        net(x)
        return stats.total * 1

    if passed:
        check_equivalent(forward, net, stats, BATCH, backend="eager", iters=3)
    else:
        check_equivalent(lambda net, x: net(x), net, BATCH, backend="eager", iters=3)
    assert stats.total.item() == 0.0


def test_a_closure_over_a_model_trains_its_side_s_copy() -> None:
    net, opt = training()
    weight = net.weight.detach().clone()
    seen: list[tuple[bool, Any]] = []

    def forward(x: torch.Tensor) -> torch.Tensor:
        return net(x)

    def step(forward: Callable[..., torch.Tensor], opt: Any, x: torch.Tensor) -> torch.Tensor:
        loss = forward(x).sum()
        loss.backward()
        opt.step()
        opt.zero_grad()
        seen.append((torch.compiler.is_compiling(), loss.detach()))
        return loss.detach()

    check_equivalent(step, forward, opt, BATCH, backend="eager", iters=2)
    # The optimizer steps the model the closure calls: the second loss is lower.
    for first, second in per_side(seen):
        assert second < first
    assert torch.equal(net.weight, weight) and net.weight.grad is None


def nudged(net: nn.Module, x: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        net.weight.add_(1.0)
    return net(x)


def scaled(x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    scale.mul_(2)
    return x * scale


@pytest.mark.parametrize("over", ["module", "tensor"])
def test_a_partial_over_a_model_or_a_tensor_is_copied_with_it(over: str) -> None:
    net, _ = training()
    scale = torch.ones(())
    weight = net.weight.detach().clone()
    bound = (
        functools.partial(nudged, net)
        if over == "module"
        else functools.partial(scaled, scale=scale)
    )
    check_equivalent(lambda fn, x: fn(x), bound, BATCH, backend="eager", iters=2)
    assert torch.equal(net.weight, weight) and scale.item() == 1.0


class Box:
    """Holds a tensor it was given: a view of another argument."""

    def __init__(self, row: torch.Tensor) -> None:
        self.row = row


def test_a_view_of_an_argument_held_by_an_object_stays_a_view_of_its_copy() -> None:
    x = torch.zeros(4)
    x_copy, box_copy = clone_arguments([x, Box(x[1:3])])
    box_copy.row.add_(1)
    assert x_copy.tolist() == [0.0, 1.0, 1.0, 0.0] and x.tolist() == [0.0] * 4


class Monitor:
    """Holds a model and something no copy can hold."""

    def __init__(self, net: nn.Module, extra: object) -> None:
        self.net = net
        self.extra = extra


def _generator() -> Iterator[int]:
    yield 1


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (lambda path: threading.Lock(), "cannot pickle '_thread.lock' object"),
        (lambda path: _generator(), "cannot pickle 'generator' object"),
        (lambda path: path.open("w"), "cannot pickle '_io.TextIOWrapper' object"),
    ],
    ids=["lock", "generator", "file"],
)
def test_an_object_that_cannot_be_copied_with_its_graph_fails_in_one_line(
    make: Callable[[Path], object], why: str, tmp_path: Path
) -> None:
    net, _ = training()
    extra = make(tmp_path / "log.txt")
    with pytest.raises(ConfigurationError) as raised:
        check_equivalent(
            lambda monitor, x: monitor.net(x), Monitor(net, extra), BATCH, backend="eager"
        )
    message = str(raised.value)
    assert "\n" not in message and raised.value.__cause__ is None
    assert message.startswith("argument monitor (Monitor) holds monitor.net (Linear)")
    assert why in message and "__deepcopy__" in message
    # What holds nothing copied per side is passed to both sides as before,
    # whatever it holds.
    check_equivalent(lambda x, held: x * 2, BATCH, Monitor(None, extra), backend="eager", iters=1)  # type: ignore[arg-type]
    if hasattr(extra, "close"):
        extra.close()


# ---- the float64 reference over objects copied with the graph ----------------


def normed() -> nn.Module:
    """A linear layer's bias before a batch norm: its true gradient is zero, its
    computed one rounding noise, which Adam amplifies into a step of ``±lr``: a
    compiled update that differs from eager's by rounding alone."""
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 1))


def _regression() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    return torch.randn(6, 4, generator=g), torch.randn(6, 1, generator=g)


class Averages:
    """An EMA helper over a model, holding shadow tensors of its own."""

    def __init__(self, model: nn.Module) -> None:
        self.model = model
        self.shadow = {k: v.detach().clone() for k, v in model.state_dict().items()}

    def update(self) -> None:
        with torch.no_grad():
            for key, value in self.model.state_dict().items():
                if value.dtype.is_floating_point:
                    self.shadow[key].mul_(0.9).add_(value, alpha=0.1)


class Holder:
    """A trainer that holds only the model (the guide's example)."""

    def __init__(self, model: nn.Module) -> None:
        self.model = model


Optimizer = torch.optim.Optimizer
Tensor = torch.Tensor


def _adam_step(model: nn.Module, opt: Optimizer, x: Tensor, y: Tensor) -> Tensor:
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    return loss.detach()


def _scheduled_adam(model: nn.Module, opt: Optimizer, sched: Any, x: Tensor, y: Tensor) -> Tensor:
    loss = _adam_step(model, opt, x, y)
    sched.step()
    return loss


def _held_model(holder: Holder, opt: Optimizer, x: Tensor, y: Tensor) -> Tensor:
    return _adam_step(holder.model, opt, x, y)


def _averaged(model: nn.Module, opt: Optimizer, ema: Averages, x: Tensor, y: Tensor) -> Tensor:
    loss = _adam_step(model, opt, x, y)
    ema.update()
    return loss


@pytest.mark.parametrize("held", ["scheduler-over-tensor-lr", "trainer", "ema"])
def test_rounding_through_an_object_copied_with_the_graph_is_judged_against_float64(
    held: str,
) -> None:
    # Adam's amplified rounding of the bias before the batch norm differs
    # past any tolerance; the float64 reference explains it once what the
    # object holds is converted with the arguments (the scheduler's tensor
    # learning rates are settings, left as they are).
    model = normed()
    lr: float | torch.Tensor = torch.tensor(1e-2) if held.startswith("scheduler") else 1e-2
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    if held == "trainer":
        check_equivalent(
            _held_model, Holder(model), opt, *_regression(), backend="aot_eager", iters=3
        )
    elif held == "ema":
        check_equivalent(
            _averaged, model, opt, Averages(model), *_regression(), backend="aot_eager", iters=3
        )
    else:
        sched = torch.optim.lr_scheduler.StepLR(opt, 1, 0.9)
        check_equivalent(
            _scheduled_adam, model, opt, sched, *_regression(), backend="aot_eager", iters=3
        )


def test_the_float64_run_converts_what_copied_objects_hold_in_place() -> None:
    model = normed()
    opt = torch.optim.Adam(model.parameters(), lr=torch.tensor(1e-2))
    _adam_step(model, opt, *_regression())
    sched = torch.optim.lr_scheduler.StepLR(opt, 1, 0.9)
    ema = Averages(model)
    x = torch.zeros(4)
    box = Box(x[1:3])
    copies = clone_arguments([Holder(model), opt, sched, ema, x, box])
    holder, opt_copy, sched_copy, ema_copy, x_copy, box_copy = copies
    shadow = ema_copy.shadow["0.weight"]
    assert to_float64(copies)
    assert holder.model[0].weight.dtype == torch.float64
    assert opt_copy.param_groups[0]["params"][0] is holder.model[0].weight
    state = opt_copy.state[holder.model[0].weight]
    assert state["exp_avg"].dtype == torch.float64
    # Settings keep their dtype; what is not floating stays as it is.
    assert opt_copy.param_groups[0]["lr"].dtype == torch.float32
    assert all(lr.dtype == torch.float32 for lr in sched_copy.base_lrs)
    assert holder.model[1].num_batches_tracked.dtype == torch.long
    # The EMA's tensors in place; a held view still views its argument.
    assert ema_copy.shadow["0.weight"] is shadow and shadow.dtype == torch.float64
    assert box_copy.row.dtype == torch.float64
    box_copy.row.add_(1)
    assert x_copy.tolist() == [0.0, 1.0, 1.0, 0.0]
    # The caller's objects are untouched.
    assert model[0].weight.dtype == torch.float32 and ema.shadow["0.weight"].dtype == torch.float32


def test_the_float64_run_refuses_a_held_view_of_a_module_s_memory() -> None:
    # double() gives the module new memory; a view of its old memory held
    # elsewhere would stop being one.
    model = normed()
    assert not to_float64(clone_arguments([model, Box(model[0].weight[0])]))


# ---- aliasing, cost, devices, weak references ---------------------------------


class Buffered(nn.Module):
    """A module whose buffer is a tensor the program also gets a scalar of."""

    def __init__(self, x: torch.Tensor) -> None:
        super().__init__()
        self.register_buffer("x", x)

    def forward(self, s: torch.Tensor) -> torch.Tensor:
        return self.x * s


def test_a_buffer_over_a_host_scalar_argument_s_memory_keeps_its_values() -> None:
    # The scalar is copied alone (one element of a larger storage): the
    # buffer is copied whole, not rebuilt over that one element.
    x = torch.arange(1000.0)
    module = Buffered(x)
    scalar, copied = clone_arguments([x[3], module])
    assert copied.x.tolist() == x.tolist() and scalar.item() == 3.0
    check_equivalent(lambda s, m: m(s), x[3], module, backend="eager", iters=2)


class Vocabulary:
    """A tokenizer-like argument: large, and holding no tensor. Counts how often
    its attributes are walked."""

    walks = 0

    def __init__(self) -> None:
        self.vocab = {f"w{i}": i for i in range(1000)}
        self.merges = [(f"a{i}", f"b{i}") for i in range(1000)]

    def __getattribute__(self, name: str) -> Any:
        if name == "__dict__":
            Vocabulary.walks += 1
        return object.__getattribute__(self, name)


def test_an_argument_that_holds_nothing_per_side_is_walked_once_per_check() -> None:
    Vocabulary.walks = 0
    tokens = Vocabulary()
    check_equivalent(lambda tok, x: x * len(tok.vocab), tokens, BATCH, backend="eager", iters=4)
    # One walk of the arguments' graph serves both sides' copies; observing
    # them, three times a call, walks it no more.
    assert Vocabulary.walks == 1
    copies = clone_arguments([tokens, BATCH])
    assert copies[0] is tokens
    Vocabulary.walks = 0
    observed_arguments(copies, ["tok", "x"])
    assert Vocabulary.walks == 0


class Kit:
    """A trainer holding a model, its averages, a count and maybe a view of an argument."""

    def __init__(self, net: nn.Module, x: torch.Tensor | None = None) -> None:
        self.net = net
        self.shadow = [p.detach().clone() for p in net.parameters()]
        self.count = torch.zeros(())
        self.row = None if x is None else x[1:3]


def test_what_copied_objects_hold_goes_to_the_check_s_device() -> None:
    # The meta device stands in for a GPU: what a copied object holds goes
    # there as the arguments do, identity kept.
    net, _ = training()
    net(BATCH).sum().backward()
    opt = torch.optim.Adam(net.parameters(), lr=0.1)
    opt.step()  # its state: step counts (host scalars) and averages
    meta = torch.device("meta")
    kit, opt_copy = clone_arguments([Kit(net), opt], meta)
    weight = kit.net.weight
    assert weight.device == meta and isinstance(weight, nn.Parameter)
    assert opt_copy.param_groups[0]["params"][0] is weight
    assert opt_copy.state[weight]["exp_avg"].device == meta
    assert opt_copy.state[weight]["step"].device.type == "cpu"  # a host scalar
    assert all(t.device == meta for t in kit.shadow)
    assert kit.count.device.type == "cpu"
    assert net.weight.device.type == "cpu"
    # A held view of a tensor argument views that argument's copy there.
    x = torch.arange(6.0)
    x_copy, kit = clone_arguments([x, Kit(net, x)], meta)
    assert kit.row.device == meta and kit.row.storage_offset() == 1
    assert kit.row.untyped_storage()._cdata == x_copy.untyped_storage()._cdata


class Watcher:
    """Refers to a model weakly first, then holds it."""

    def __init__(self, net: nn.Module) -> None:
        self.ref = weakref.ref(net)
        self.net = net


def test_a_weak_reference_met_before_its_referent_refers_to_the_copy() -> None:
    net, _ = training()
    (watcher,) = clone_arguments([Watcher(net)])
    assert watcher.ref() is watcher.net and watcher.net is not net


class Normalizer:
    """A constant tensor beside something no copy can hold."""

    def __init__(self, mean: torch.Tensor) -> None:
        self.mean = mean
        self.lock = threading.Lock()


def test_an_uncopyable_object_that_owns_what_it_holds_is_shared_as_before() -> None:
    normalizer = Normalizer(torch.tensor([0.5]))
    check_equivalent(lambda n, x: x - n.mean, normalizer, BATCH, backend="eager", iters=2)
    (same,) = clone_arguments([normalizer])
    assert same is normalizer
    # A tensor that is an argument too is another side's: no sharing then.
    mean = torch.tensor([0.5])
    with pytest.raises(ConfigurationError, match=r"argument n \(Normalizer\) holds n\.mean"):
        check_equivalent(
            lambda n, m, x: x - n.mean - m, Normalizer(mean), mean, BATCH, backend="eager"
        )


def _counting(module: nn.Module) -> nn.Module:
    module.register_buffer("count", torch.zeros(()))
    module.register_forward_hook(lambda mod, args, out: out * module.count.add_(1))
    return module


def test_a_hook_on_a_parametrized_module_calls_its_side_s_copy() -> None:
    net = _counting(nn.utils.parametrizations.weight_norm(nn.Linear(2, 2)))
    (copied,) = clone_arguments([net])
    copied(BATCH[:, :2])
    assert (copied.count.item(), net.count.item()) == (1.0, 0.0)
    check_equivalent(lambda m, x: m(x), net, BATCH[:, :2], backend="eager", iters=2)
    assert net.count.item() == 0.0


def test_a_closure_an_own_deepcopy_would_keep_fails_in_one_line() -> None:
    traced = _counting(torch.fx.symbolic_trace(nn.Sequential(nn.Linear(2, 2))))
    with pytest.raises(ConfigurationError) as raised:
        check_equivalent(lambda m, x: m(x), traced, BATCH[:, :2], backend="eager")
    message = str(raised.value)
    assert "\n" not in message and "own __deepcopy__" in message
    traced_as = type(traced).__name__  # a GraphModule class named after what was traced
    assert message.startswith(f"argument m ({traced_as}) leads to function _counting.<locals>")
    assert traced.count.item() == 0.0


def _restored(obj: Any, state: dict[str, Any]) -> None:
    obj.__dict__.update(state, restored=True)


class SetsItsState:
    """Reduced with pickle's sixth element: a state setter."""

    def __init__(self, net: nn.Module) -> None:
        self.net = net

    def __reduce__(self) -> tuple[Any, ...]:
        return (object.__new__, (SetsItsState,), dict(vars(self)), None, None, _restored)


def test_a_reduce_tuple_s_state_setter_sets_the_copy_s_state() -> None:
    net, _ = training()
    (copied,) = clone_arguments([SetsItsState(net)])
    assert copied.restored and copied.net is not net


def test_what_copying_decided_holds_for_the_arguments_advance_gives_again() -> None:
    net, opt = training()
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1)
    copies = clone_arguments([net, opt, sched, Vocabulary()])
    assert copies.carried == {2}
    Vocabulary.walks = 0
    following = following_copies(copies, [*copies, Holder(copies[0])])
    # The scheduler given again is still observed by what it holds, the
    # vocabulary still as itself (not walked again); the new holder is decided.
    assert following.carried == {2, 4} and Vocabulary.walks == 0
