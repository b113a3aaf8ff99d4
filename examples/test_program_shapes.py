"""Program shapes that stress the compile path beyond one graph of plain ops.

One scenario per hazard class the generator draws: several graphs per
program, custom autograd Functions and custom ops, an optimizer stepping
between calls, inputs that overlap at an offset. Each is a model author's
check that eager and compiled agree.
"""

from __future__ import annotations

import torch

if not hasattr(torch.ops.cgraph_examples, "scale_"):

    @torch.library.custom_op("cgraph_examples::scale_", mutates_args=("x",))
    def _scale_(x: torch.Tensor, factor: float) -> None:
        x.mul_(factor)

    @_scale_.register_fake
    def _(x: torch.Tensor, factor: float) -> None:
        return None


class Doubled(torch.autograd.Function):
    """Writes its input in place and says so (``mark_dirty``)."""

    @staticmethod
    def forward(ctx, x):
        x.mul_(2)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


def test_graph_break_between_a_mutation_and_a_read(cgraph):
    # Two graphs: the first mutates an input, the second reads it.
    def model(x, y):
        y.add_(1)
        torch._dynamo.graph_break()
        return x * y

    cgraph.check(model, torch.randn(3, requires_grad=True), torch.randn(3))


def test_custom_op_that_mutates_its_argument(cgraph):
    def model(x, y):
        torch.ops.cgraph_examples.scale_(y, 0.5)
        return x + y

    cgraph.check(model, torch.randn(3, requires_grad=True), torch.randn(3))


def test_autograd_function_with_mark_dirty(cgraph):
    def model(x):
        return Doubled.apply(x * 1)

    cgraph.check(model, torch.randn(3, requires_grad=True))


def test_optimizer_step_between_calls(cgraph):
    # Parameters change in place between calls, and momentum state grows.
    net = torch.nn.Linear(4, 2)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)

    def step(net, optimizer):
        loss = net(torch.ones(3, 4)).sum()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=False)
        return loss.detach()

    cgraph.check(step, net, optimizer, backward=False)


def test_inputs_overlapping_at_an_offset(cgraph):
    def model(x, y):
        return x * y.sum()

    base = torch.randn(5)
    cgraph.check(model, base[1:4], base[:3])
