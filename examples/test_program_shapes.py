"""Program shapes that stress the compile path beyond one graph of plain ops.

One scenario per hazard class the generator draws: several graphs per
program and several compiled functions, custom autograd Functions and
custom ops, an optimizer stepping between calls, inputs that overlap at an
offset, inputs that require grad without being leaves, low-precision and
complex values, an ambient inference mode, foreach ops, activation
checkpointing, autocast, post-accumulate-grad hooks, layouts and
value-dependent sizes, torch.func, grad modes switched inside a call.
Each is a model author's check that eager and compiled agree.
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


class Shifted(torch.autograd.Function):
    """Adds one to its input in place and says so (``mark_dirty``): the output
    is the input, and autograd rebases its history on the Function."""

    @staticmethod
    def forward(ctx, x):
        ctx.mark_dirty(x)
        return x.add_(1)

    @staticmethod
    def backward(ctx, grad):
        return grad


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
        return Shifted.apply(x * 1)

    cgraph.check(model, torch.randn(3, requires_grad=True))


def test_optimizer_step_between_calls(cgraph):
    # Parameters change in place between calls, and momentum state grows.
    net = torch.nn.Linear(4, 2)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)

    def step(net, optimizer):
        # The input is made beside the weights: the check moves them to its device.
        loss = net(torch.ones(3, 4, device=net.weight.device)).sum()
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


def test_an_input_that_requires_grad_but_is_not_a_leaf(cgraph):
    # An activation handed over from an earlier stage of a model (a new one
    # each call), written in place.
    def model(x):
        x.mul_(2)
        return x.sin()

    cgraph.check(model, fresh_args=lambda k: (torch.randn(3, requires_grad=True) * k,))


def test_low_precision_inputs_and_complex_views(cgraph):
    def model(h, c):
        c.real.add_(1)
        return h * 2, torch.view_as_real(c).sum(-1), c.imag

    cgraph.check(model, torch.randn(3).half(), torch.randn(3, dtype=torch.complex64))


# The protocol of repro files says what a function cannot: two functions
# compiled separately, the second writing the first's output.
TWO_COMPILED_STAGES = """
import torch


def stage0(x):
    return (x * 2,)


def stage1(x, y):
    y.add_(1)
    return (y.sum(), x * y)


def program(x):
    (y,) = stage0(x)
    return stage1(x, y)


def inputs(k):
    return (torch.randn(3, generator=torch.Generator().manual_seed(k)),)


COMPILE = ("stage0", "stage1")
"""


def test_two_compiled_functions_chained(cgraph):
    report = cgraph.check_source(TWO_COMPILED_STAGES)
    assert report.compiles >= 2


def test_inference_mode_around_every_call(cgraph):
    source = TWO_COMPILED_STAGES + 'GRAD_MODE = "inference_mode"\n'
    cgraph.check_source(source.replace('COMPILE = ("stage0", "stage1")', ""))


def test_foreach_over_two_inputs(cgraph):
    # One foreach op writes both inputs, as optimizers' fused updates do.
    def model(x, y):
        torch._foreach_mul_([x, y], 2.0)
        return torch._foreach_add([x, y], 1.0)

    cgraph.check(model, torch.randn(3), torch.randn(2, 3))


def _recomputed(t):
    u = t * 2
    u.add_(1)
    return torch.nn.functional.dropout(u, 0.5).sin()


def test_activation_checkpointing_with_random_numbers(cgraph):
    # Backward recomputes the body: its dropout mask must be the forward's.
    def model(x):
        return torch.utils.checkpoint.checkpoint(_recomputed, x, use_reentrant=False)

    cgraph.check(model, torch.randn(4, requires_grad=True))


def test_autocast_region_with_writes(cgraph):
    def model(x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y = x @ x.mT
            y.add_(1)
        return y, y.float().sum()

    cgraph.check(model, torch.randn(2, 3))


def test_optimizer_step_in_a_post_accumulate_grad_hook(cgraph):
    # The parameter is updated the moment its grad is accumulated. The hook
    # is registered inside the call: each side's copy of the weight gets it.
    def step_in_backward(p):
        with torch.no_grad():
            p.add_(p.grad, alpha=-0.1)

    def model(x, w):
        handle = w.register_post_accumulate_grad_hook(step_in_backward)
        loss = (x * w).sum()
        loss.backward()
        handle.remove()
        return loss.detach()

    cgraph.check(model, torch.randn(3), torch.randn(3, requires_grad=True), backward=False)


def test_layouts_windows_and_value_dependent_sizes(cgraph):
    def model(x):
        channels_last = x.contiguous(memory_format=torch.channels_last)
        windows = x.flatten().unfold(0, 2, 1)
        return channels_last * 2, windows.sum(-1), x.nonzero(), channels_last.stride()

    cgraph.check(model, torch.randn(2, 3, 2, 2))


def test_function_transforms(cgraph):
    def model(x):
        batched = torch.vmap(lambda t: t * t.sum())(x)
        gradient = torch.func.grad(lambda t: t.sin().sum())(x)
        return batched, gradient

    cgraph.check(model, torch.randn(2, 3))


def test_grad_mode_switched_inside_an_ambient_mode(cgraph):
    # Blocks and calls that switch the grad mode: each must be undone.
    def model(x):
        with torch.inference_mode(False):
            y = x * 2
        torch.set_grad_enabled(False)
        z = y + 1
        torch.set_grad_enabled(True)
        return y, z

    cgraph.check(model, torch.randn(3, requires_grad=True))


def test_a_write_through_a_conjugate_view_and_forward_mode(cgraph):
    # conj() is lazy, a bit on a view: a write through it lands conjugated
    # in its base. Forward mode (jvp) computes with dual tensors instead of
    # a backward, and stride() is read off the compiler's fake tensor.
    def model(z, x):
        z.conj().mul_(2)
        _, tangent = torch.func.jvp(torch.sin, (x,), (torch.ones_like(x),))
        return z, tangent * x.t().stride(0)

    cgraph.check(model, torch.randn(3, dtype=torch.complex64), torch.randn(2, 3))
