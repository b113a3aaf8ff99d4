"""Modules and optimizers as arguments: copied per side, observed by name, never shared."""

from __future__ import annotations

import pytest
import torch

import cgraph_doubles.faults  # noqa: F401  (registers the fault backends)
from pytest_cgraph import EquivalenceError, check_equivalent


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.lin = torch.nn.Linear(4, 2)
        self.register_buffer("steps", torch.zeros(()))


def update_under_no_grad(net: Net) -> torch.Tensor:
    out = net.lin(torch.ones(3, 4))
    with torch.no_grad():
        for parameter in net.parameters():
            parameter.mul_(0.9)
    return out


def sgd_step(net: Net, optimizer: torch.optim.Optimizer) -> torch.Tensor:
    loss = net.lin(torch.ones(3, 4)).sum()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return loss.detach()


def scaled_by_a_dict(state: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    return x * state["scale"]


@pytest.mark.parametrize("backend", ["aot_eager", "cudagraphs"])
def test_a_module_updated_in_place_passes_on_a_correct_backend(backend: str) -> None:
    net = Net()
    before = net.lin.weight.detach().clone()
    check_equivalent(update_under_no_grad, net, backend=backend, iters=4)
    # The caller's module is untouched: each side worked on its own copy.
    assert torch.equal(net.lin.weight.detach(), before)


@pytest.mark.parametrize("backend", ["aot_eager", "cudagraphs"])
def test_an_optimizer_step_passes_on_a_correct_backend(backend: str) -> None:
    net = Net()
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    check_equivalent(sgd_step, net, optimizer, backend=backend, iters=4, backward=False)
    assert optimizer.state == {} or all(not state for state in optimizer.state.values())


def test_a_lost_parameter_update_is_a_mutation_of_the_named_parameter() -> None:
    with pytest.raises(EquivalenceError) as caught:
        check_equivalent(update_under_no_grad, Net(), backend="faulty_lost_input_mutation")
    difference = caught.value.difference
    assert (difference.kind, str(difference.place)) == ("mutation", "argument net.lin.weight")


def test_a_parameter_inside_a_dict_is_an_argument() -> None:
    state = {"scale": torch.nn.Parameter(torch.full((3,), 2.0))}
    report = check_equivalent(scaled_by_a_dict, state, torch.ones(3), backend="aot_eager")
    assert report.tensor_outputs == 1
    assert state["scale"].grad is None  # the caller's parameter got no grad from the check


def test_an_optimizer_s_state_is_named_by_each_parameter_s_position_in_its_groups() -> None:
    # A difference in the second parameter's momentum must be told apart from the
    # first's: the name is what the failure shows and what a signature is made of.
    from pytest_cgraph.oracle.graphs import named_state

    first, second, third = (torch.nn.Parameter(torch.ones(2)) for _ in range(3))
    opt = torch.optim.SGD([{"params": [first, second]}, {"params": [third]}], lr=0.1, momentum=0.9)
    for parameter in (first, second, third):
        parameter.grad = torch.ones(2)
    opt.step()
    names = [name for name, _ in named_state("opt", opt)]
    assert names == [f"opt.state[{i}].momentum_buffer" for i in range(3)]
    held = dict(named_state("opt", opt))
    assert held["opt.state[1].momentum_buffer"] is opt.state[second]["momentum_buffer"]
