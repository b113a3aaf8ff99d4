"""pytorch/pytorch#181146: a custom Function given one tensor in two slots, with backward returning None for one slot.
Area: autograd-hooks. Backend: eager. Symptom: silent.
Dynamo deduplicates the aliased inputs into one argument and maps the backward's returns to it wrongly,
so the shared input receives None/zero instead of the tensor slot's gradient.
Written from the issue's description."""

import sys

import torch


class F(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        return a * 2 + b

    @staticmethod
    def backward(ctx, g):
        return None, g * 5


def fn(x):
    return F.apply(x, x).sum()


def run(f):
    x = torch.ones(3, requires_grad=True)
    f(x).backward()
    return x.grad


e = run(fn)
try:
    c = run(torch.compile(fn, backend="eager"))
except Exception as ex:
    print("compiled raised", type(ex).__name__, str(ex).splitlines()[0])
    sys.exit(1)
print("eager x.grad:", e, "\ncompiled x.grad:", c)
sys.exit(0 if c is not None and torch.allclose(e, c) else 1)
