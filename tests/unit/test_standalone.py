"""A marked test written inline: its arguments and what its function names survive the trip."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn.functional as F
import torch.utils._pytree as pytree

from pytest_cgraph.checking.runner import load_source
from pytest_cgraph.oracle.protocol import FRESH_INPUTS, INPUTS, ITERS, PROGRAM
from pytest_cgraph.recording.standalone import INLINE_ELEMENTS, NotInlinable, program_source
from pytest_cgraph.registry.entries import CUSTOM_OP_WRITE, program_ops

SCALE = 3.0
DTYPE = torch.float64


def scaled(x: torch.Tensor) -> torch.Tensor:
    return F.relu(x) * SCALE


class Affine(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.full((3,), 2.0))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return scaled(x) * self.weight


def uses_the_module(x: torch.Tensor, n: int) -> torch.Tensor:
    return Affine()(x.to(DTYPE).float()) + n + math.pi


#: A namespace of ops bound at module level, as tests spelling ATen ops write it:
#: an attribute of torch, not a module ``import torch.ops.aten`` finds.
aten = torch.ops.aten


def transposes_in_place(x: torch.Tensor) -> torch.Tensor:
    y = x * 2
    aten.t_(y)
    return y


@torch.library.custom_op("cgraph_standalone::bump_", mutates_args=("pos",))
def bump_(pos: torch.Tensor, n: int) -> None:
    pos.add_(n)


@bump_.register_fake
def _(pos: torch.Tensor, n: int) -> None:
    return None


def bumps_with_a_custom_op(pos: torch.Tensor) -> torch.Tensor:
    old = pos.clone()
    bump_(pos, 2)
    return old


def returns_its_argument(x: torch.Tensor) -> torch.Tensor:
    return x


LOCK = functools.partial(print)  # not a literal, module, function or class


def uses_an_object(x: torch.Tensor) -> torch.Tensor:
    LOCK()
    return x


def hooked_module() -> torch.nn.Module:
    module = torch.nn.Linear(1, 1)
    module.register_forward_hook(lambda *args: None)
    return module


class Tied(torch.nn.Module):
    """Two submodules sharing one parameter, a buffer, and a literal attribute."""

    def __init__(self) -> None:
        super().__init__()
        self.first = Affine()
        self.second = Affine()
        self.second.weight = self.first.weight
        self.register_buffer("offset", torch.tensor([0.5, 1.0, 1.5]))
        self.register_buffer("scratch", torch.zeros(3), persistent=False)
        self.power = 2

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.second(self.first(x)) ** self.power + self.offset + self.scratch


def calls_the_module(net: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    return net(x)


def test_a_module_argument_is_rebuilt_with_its_state() -> None:
    net = Tied().eval()
    with torch.no_grad():
        net.first.weight.mul_(1.5)
    net.first.weight.grad = torch.full((3,), 0.25)
    x = torch.tensor([1.0, -2.0, 3.0])
    source, size = program_source(calls_the_module, ["net", "x"], [net, x], iters=2)
    assert "class Tied(torch.nn.Module):" in source and "class Affine(" in source
    assert size == 2 + 3 + 3 + 3 + 3  # arguments, the shared weight once, buffers, x
    rebuilt, copied_x = load_source(source, "<module test>")[INPUTS](1)
    assert type(rebuilt).__name__ == "Tied" and not rebuilt.training
    assert rebuilt.first.weight is rebuilt.second.weight
    assert isinstance(rebuilt.first.weight, torch.nn.Parameter)
    torch.testing.assert_close(rebuilt.first.weight.grad, torch.full((3,), 0.25))
    assert set(rebuilt.state_dict()) == set(net.state_dict())  # scratch stays non-persistent
    torch.testing.assert_close(rebuilt(copied_x), net(x))


class HalvingSGD(torch.optim.SGD):
    """A user's own optimizer class: its source is carried like a module's."""

    def step(self, closure: Any = None) -> Any:
        for group in self.param_groups:
            group["lr"] *= 0.5
        return super().step(closure)


def loss_of(net: torch.nn.Module) -> torch.Tensor:
    return (net(torch.tensor([1.0, -2.0, 3.0])) ** 2).sum()


def trained(optimizer: torch.optim.Optimizer, net: torch.nn.Module, steps: int = 2) -> None:
    """Steps taken before the test, as a fixture may take them: the state to carry."""
    for _ in range(steps):
        optimizer.zero_grad()
        loss_of(net).backward()
        optimizer.step()


def two_groups(net: Tied) -> list[dict[str, Any]]:
    return [
        {"params": [net.first.weight], "lr": 1e-3, "weight_decay": 0.01},
        {"params": [net.offset_scale]},
    ]


OPTIMIZERS: dict[str, Callable[[Tied], torch.optim.Optimizer]] = {
    "sgd-momentum-two-groups": lambda net: torch.optim.SGD(two_groups(net), lr=1e-4, momentum=0.9),
    "adam-amsgrad": lambda net: torch.optim.Adam(net.parameters(), lr=0.01, amsgrad=True),
    "adamw-tensor-lr": lambda net: torch.optim.AdamW(net.parameters(), lr=torch.tensor(0.01)),
    "rmsprop-centered": lambda net: torch.optim.RMSprop(
        net.parameters(), lr=0.01, momentum=0.5, centered=True
    ),
    "adagrad": lambda net: torch.optim.Adagrad(two_groups(net), lr=0.1),
    "asgd": lambda net: torch.optim.ASGD(net.parameters(), lr=0.01),
    "rprop": lambda net: torch.optim.Rprop(net.parameters(), lr=0.01),
    "nadam": lambda net: torch.optim.NAdam(net.parameters(), lr=0.01),
    "user-class": lambda net: HalvingSGD(net.parameters(), lr=0.1, momentum=0.5, nesterov=True),
}


def with_a_scale(net: Tied) -> Tied:
    """``net`` with a parameter of its own, outside its submodules (a second group's)."""
    net.offset_scale = torch.nn.Parameter(torch.tensor(1.5))
    return net


def steps_the_optimizer(net: torch.nn.Module, opt: torch.optim.Optimizer) -> torch.Tensor:
    opt.zero_grad()
    loss = loss_of(net)
    loss.backward()
    opt.step()
    return loss.detach()


def same_tree(rebuilt: Any, original: Any) -> None:
    """Equal structure, and every tensor equal in dtype, shape and every bit."""
    leaves, spec = pytree.tree_flatten(rebuilt)
    expected, expected_spec = pytree.tree_flatten(original)
    assert spec == expected_spec
    for leaf, want in zip(leaves, expected, strict=True):
        if isinstance(want, torch.Tensor):
            assert isinstance(leaf, torch.Tensor) and leaf.dtype == want.dtype
            torch.testing.assert_close(leaf, want, rtol=0, atol=0, equal_nan=True)
        else:
            assert type(leaf) is type(want) and leaf == want


@pytest.mark.parametrize("kind", list(OPTIMIZERS))
def test_an_optimizer_argument_is_rebuilt_over_its_modules_parameters(kind: str) -> None:
    net = with_a_scale(Tied())
    opt = OPTIMIZERS[kind](net)
    trained(opt, net)
    loss_of(net).backward()  # a .grad the next step reads
    # The optimizer comes first: it is still bound to the module written before it.
    source, _ = program_source(steps_the_optimizer, ["opt", "net"], [opt, net], iters=2)
    assert "class Tied(torch.nn.Module):" in source and "class Affine(" in source
    assert "net.get_parameter('first.weight')" in source
    rebuilt_opt, rebuilt_net = load_source(source, "<optimizer test>")[INPUTS](1)
    assert type(rebuilt_opt).__name__ == type(opt).__name__
    # Its parameters are the rebuilt module's, the tied one once.
    parameters = [p for group in rebuilt_opt.param_groups for p in group["params"]]
    expected = [p for group in opt.param_groups for p in group["params"]]
    named = dict(net.named_parameters())
    rebuilt_named = dict(rebuilt_net.named_parameters())
    for parameter, original in zip(parameters, expected, strict=True):
        (path,) = (path for path, p in named.items() if p is original)
        assert parameter is rebuilt_named[path]
    # Its groups and state round-trip: the state_dict is the original's, bit for bit.
    same_tree(rebuilt_opt.state_dict(), opt.state_dict())
    # And the next step moves the rebuilt module as it moves the original.
    steps_the_optimizer(rebuilt_net, rebuilt_opt)
    steps_the_optimizer(net, opt)
    same_tree(rebuilt_net.state_dict(), net.state_dict())
    same_tree(rebuilt_opt.state_dict(), opt.state_dict())


def test_an_optimizer_over_tensor_arguments_and_its_own_parameters() -> None:
    w = torch.nn.Parameter(torch.tensor([1.0, 2.0]))
    own = torch.nn.Parameter(torch.tensor([3.0]))
    opt = torch.optim.SGD([w, own], lr=0.1, momentum=0.9)
    for _ in range(2):
        opt.zero_grad()
        ((w**2).sum() + (own**3).sum()).backward()
        opt.step()
    source, size = program_source(lambda_free_step, ["w", "opt"], [w, opt], iters=2)
    rebuilt_w, rebuilt_opt = load_source(source, "<optimizer test>")[INPUTS](1)
    assert rebuilt_opt.param_groups[0]["params"][0] is rebuilt_w
    assert rebuilt_opt.param_groups[0]["params"][1] is not rebuilt_w
    same_tree(rebuilt_opt.state_dict(), opt.state_dict())
    torch.testing.assert_close(rebuilt_opt.param_groups[0]["params"][1].grad, own.grad)
    # 2 arguments, w, the parameter only the optimizer holds, two momentum buffers
    assert size == 2 + 2 + 1 + 2 + 1


def lambda_free_step(w: torch.Tensor, opt: torch.optim.Optimizer) -> torch.Tensor:
    opt.zero_grad()
    loss = (w**2).sum()
    loss.backward()
    opt.step()
    return loss.detach()


def test_a_parameter_passed_beside_its_module_stays_the_modules() -> None:
    net = Affine()
    source, size = program_source(
        calls_the_module_with_its_weight, ["net", "w"], [net, net.weight], iters=1
    )
    rebuilt_net, rebuilt_w = load_source(source, "<module test>")[INPUTS](1)
    assert rebuilt_w is rebuilt_net.weight
    assert size == 2 + 3  # the weight written once


def calls_the_module_with_its_weight(net: torch.nn.Module, w: torch.Tensor) -> torch.Tensor:
    return net(w)


class Twice(torch.nn.Module):
    """One submodule registered under two names."""

    def __init__(self) -> None:
        super().__init__()
        self.inner = Affine()
        self.again = self.inner

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.again(self.inner(x))


def calls_both(net: torch.nn.Module, inner: torch.nn.Module) -> torch.Tensor:
    return net(torch.ones(3)) + inner(torch.ones(3))


@pytest.mark.parametrize("order", ["parent-first", "child-first"])
def test_a_module_met_twice_stays_one_module(order: str) -> None:
    net = Twice()
    names, values = ["net", "inner"], [net, net.inner]
    if order == "child-first":
        names, values = names[::-1], values[::-1]
    source, _ = program_source(calls_both, names, values, iters=1)
    rebuilt = dict(zip(names, load_source(source, "<module test>")[INPUTS](1), strict=True))
    assert rebuilt["net"].inner is rebuilt["net"].again is rebuilt["inner"]


def hooked_optimizer() -> torch.optim.Optimizer:
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.ones(1))], lr=0.1)
    optimizer.register_step_pre_hook(lambda *args: None)
    return optimizer


def scheduled_optimizer() -> torch.optim.Optimizer:
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.ones(1))], lr=0.1)
    torch.optim.lr_scheduler.StepLR(optimizer, 1)  # wraps the optimizer's step
    return optimizer


def optimizer_with_state_on(device: str) -> torch.optim.Optimizer:
    parameter = torch.nn.Parameter(torch.ones(1))
    optimizer = torch.optim.Adam([parameter], lr=0.1)
    optimizer.state[parameter] = {"exp_avg": torch.zeros(1, device=device)}
    return optimizer


def hooked_tensor() -> torch.Tensor:
    tensor = torch.ones(1, requires_grad=True)
    tensor.register_hook(lambda grad: grad * 2)
    return tensor


def arguments() -> tuple[list[str], list[object]]:
    storage = torch.arange(12.0)
    leaf = torch.tensor([1.0, float("nan"), -float("inf")], requires_grad=True)
    with_grad = torch.ones(2, requires_grad=True)
    with_grad.grad = torch.tensor([0.5, 0.25])
    values: list[object] = [
        torch.tensor(3, dtype=torch.int64),
        storage[2:8].view(2, 3).t(),  # a transposed view at an offset
        storage[1:4],  # shares the storage of the argument before
        leaf,
        leaf * 2,  # not a leaf
        torch.nn.Parameter(torch.tensor([[1.0, 2.0]])),
        with_grad,
        torch.tensor([True, False]),
        torch.zeros(2, 3)[:, :0],
        4,
        float("nan"),
        torch.float16,
        (1, "two", None),
    ]
    return [f"a{i}" for i in range(len(values))], values


def test_arguments_are_rebuilt_with_layout_aliasing_and_autograd_state() -> None:
    names, values = arguments()
    source, size = program_source(returns_its_argument, names, values, iters=3)
    namespace = load_source(source, "<standalone test>")
    rebuilt = namespace[INPUTS](1)
    assert namespace[ITERS] == 3 and namespace[FRESH_INPUTS] is False
    # 13 arguments + elements written: 1 + 12 (one storage for two views)
    # + 3 + 3 + 2 + 2 + 2 + 6 (the empty slice's whole storage)
    assert size == 13 + 31
    for name, original, copy in zip(names, values, rebuilt, strict=True):
        if not isinstance(original, torch.Tensor):
            assert type(copy) is type(original), name
            assert copy == original or (original != original and copy != copy), name
            continue
        assert type(copy) is type(original), name
        assert (copy.dtype, copy.shape, copy.stride(), copy.storage_offset()) == (
            original.dtype,
            original.shape,
            original.stride(),
            original.storage_offset(),
        ), name
        assert (copy.requires_grad, copy.is_leaf) == (original.requires_grad, original.is_leaf)
        torch.testing.assert_close(copy.detach(), original.detach(), equal_nan=True)
        if original.is_leaf and original.grad is not None:
            torch.testing.assert_close(copy.grad, original.grad)
    # the two views of one storage still share it in the copy
    assert rebuilt[1].untyped_storage().data_ptr() == rebuilt[2].untyped_storage().data_ptr()
    assert rebuilt[0].untyped_storage().data_ptr() != rebuilt[1].untyped_storage().data_ptr()


def test_what_the_function_names_is_carried_along() -> None:
    x = torch.tensor([-1.0, 0.5, 2.0])
    source, _ = program_source(uses_the_module, ["x", "n"], [x, 2], iters=5, rtol=0.1)
    assert "import torch.nn.functional as F" in source
    assert "import math" in source
    assert "SCALE = 3.0" in source and "DTYPE = torch.float64" in source
    assert "class Affine(torch.nn.Module):" in source and "def scaled(x" in source
    assert "RTOL = 0.1" in source
    # Only a test* function is renamed (pytest would collect it from a repro file).
    assert "def uses_the_module(" in source and "def _uses_the_module(" not in source
    assert "    return uses_the_module(x=x, n=n)" in source
    namespace = load_source(source, "<standalone test>")
    torch.testing.assert_close(namespace[PROGRAM](*namespace[INPUTS](1)), uses_the_module(x, 2))


def test_a_test_function_is_renamed_so_pytest_does_not_collect_it() -> None:
    def_line = "def test_something_else():"
    namespace: dict[str, object] = {"torch": torch}
    exec(f"{def_line}\n    return torch.ones(1)\n", namespace)
    # Source of a function defined by exec is unavailable: refused, with why.
    with pytest.raises(NotInlinable, match="source of test_something_else is not available"):
        program_source(namespace["test_something_else"], [], [], iters=1)  # type: ignore[arg-type]
    source, _ = program_source(test_doubling_is_exact, [], [], iters=1)
    assert "def _test_doubling_is_exact" in source
    assert "\ndef test_" not in source
    namespace = load_source(source, "<standalone test>")
    assert namespace[PROGRAM]() is None  # the copy runs (the test returns nothing)


def test_doubling_is_exact() -> None:  # also the test function copied above
    x = torch.arange(3.0)
    assert torch.equal(x * 2, x + x)


@pytest.mark.parametrize(
    ("function", "values", "reason"),
    [
        (returns_its_argument, [torch.zeros(INLINE_ELEMENTS + 1)], "written inline up to"),
        (
            returns_its_argument,
            [hooked_optimizer()],
            "argument 'x' has _optimizer_step_pre_hooks; hooks are not written inline",
        ),
        (
            returns_its_argument,
            [scheduled_optimizer()],
            "argument 'x' has its step\\(\\) wrapped by an LR scheduler",
        ),
        (
            returns_its_argument,
            [torch.optim.LBFGS([torch.nn.Parameter(torch.ones(1))])],
            "argument 'x' keeps '_params', a list; only literal attributes of an optimizer",
        ),
        (
            returns_its_argument,
            [optimizer_with_state_on("meta")],
            "x.state\\[0\\]\\['exp_avg'\\] is on meta; an optimizer's own tensors are "
            "written inline on the CPU only",
        ),
        (
            returns_its_argument,
            [torch.optim.SGD([torch.nn.Parameter(torch.ones(1, device="meta"))], lr=0.1)],
            "x.param_groups\\[0\\]\\['params'\\]\\[0\\] is on meta",
        ),
        (
            returns_its_argument,
            [torch.optim.lr_scheduler.StepLR(scheduled_optimizer(), 1)],
            "argument 'x' is a StepLR; only tensors, modules, optimizers and literal values",
        ),
        (returns_its_argument, [hooked_tensor()], "argument 'x' has hooks registered"),
        (returns_its_argument, [hooked_module()], "argument 'x' has _forward_hooks"),
        (returns_its_argument, [object()], "argument 'x' is a object"),
        (uses_an_object, [torch.ones(1)], "the test uses 'LOCK' \\(a partial\\)"),
        (functools.partial(returns_its_argument, 1), [], "bound arguments"),
        (Affine().forward, [torch.ones(3)], "test methods are not written inline"),
        (lambda x: x, [torch.ones(1)], "a lambda is not written inline"),
    ],
    ids=[
        "too-large",
        "optimizer-hooks",
        "optimizer-under-a-scheduler",
        "optimizer-non-literal-attribute",
        "optimizer-state-off-the-cpu",
        "optimizer-parameter-off-the-cpu",
        "scheduler",
        "tensor-hooks",
        "hooked-module",
        "object",
        "global-object",
        "partial",
        "method",
        "lambda",
    ],
)
def test_what_cannot_be_written_inline_is_refused_with_the_reason(
    function: object, values: list[object], reason: str
) -> None:
    with pytest.raises(NotInlinable, match=reason):
        program_source(function, ["x"][: len(values)], values, iters=1)  # type: ignore[arg-type]


def test_a_function_defined_in_a_test_is_written_at_module_level_unless_it_closes_over() -> None:
    scale = 3.0

    def model(x: torch.Tensor) -> torch.Tensor:
        return F.relu(x) * math.pi

    def scaled_model(x: torch.Tensor) -> torch.Tensor:
        return x * scale

    source, _ = program_source(model, ["x"], [torch.tensor([-1.0, 2.0])], iters=2)
    program = load_source(source, "<nested test>")[PROGRAM]
    torch.testing.assert_close(program(torch.tensor([-1.0, 2.0])), torch.tensor([0.0, 2 * math.pi]))
    with pytest.raises(NotInlinable, match="reads scale of the function it is defined in"):
        program_source(scaled_model, ["x"], [torch.ones(1)], iters=2)


def test_a_namespace_of_ops_bound_at_module_level_is_bound_from_its_package() -> None:
    """``aten = torch.ops.aten`` was written ``import torch.ops.aten as aten``, which
    raises ModuleNotFoundError: the repro then reported that, not the difference."""
    x = torch.arange(6.0).reshape(2, 3)
    source, _ = program_source(transposes_in_place, ["x"], [x], iters=1)
    assert "aten = torch.ops.aten" in source and "import torch.ops" not in source
    namespace = load_source(source, "<standalone test>")
    torch.testing.assert_close(namespace[PROGRAM](*namespace[INPUTS](1)), transposes_in_place(x))


def test_a_custom_op_of_the_test_s_module_is_copied_with_its_registrations() -> None:
    """A user's custom op left the check without a repro file ("a CustomOpDef, which
    cannot be written"), so a known bug met through it could not be named."""
    source, _ = program_source(bumps_with_a_custom_op, ["pos"], [torch.tensor(1.0)], iters=1)
    assert '@torch.library.custom_op("cgraph_standalone::bump_"' in source
    assert "@bump_.register_fake" in source
    # This process registered the op already: the copy binds it instead.
    assert 'if not hasattr(torch.ops.cgraph_standalone, "bump_"):' in source
    namespace = load_source(source, "<standalone test>")
    pos = torch.tensor(1.0)
    assert namespace[PROGRAM](pos).item() == 1.0 and pos.item() == 3.0
    # Read for naming, it is a value-writing custom op, whatever its name.
    ops = program_ops(source)
    assert CUSTOM_OP_WRITE in ops and "bump_" not in ops
