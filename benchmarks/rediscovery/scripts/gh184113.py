"""pytorch/pytorch#184113: a custom Function that mutates its input and marks it dirty gives a wrong grad when its return is discarded.
Area: autograd-hooks. Backend: eager. Symptom: silent.
Eager's mark_dirty rebases the input y onto the Function's node, so y.sum() backpropagates through
the custom backward (x3); Dynamo dropped mark_dirty, so y kept its old graph and the grad lost the x3.
Written from the issue's description."""

import sys

import torch


class TimesThree(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.mul_(3)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g * 3


def fn(w):
    y = torch.ones(2, 2) @ w
    TimesThree.apply(y)
    return y.sum()


def run(f):
    w = torch.eye(2, requires_grad=True)
    loss = f(w)
    loss.backward()
    return loss.detach(), w.grad


e = run(fn)
try:
    c = run(torch.compile(fn, backend="eager", fullgraph=True))
except Exception as ex:
    print("compiled raised", type(ex).__name__, str(ex).splitlines()[0])
    sys.exit(1)
print("eager (loss, w.grad):", e, "\ncompiled:", c)
sys.exit(0 if all(torch.allclose(a, b) for a, b in zip(e, c)) else 1)
