"""pytorch/pytorch#183604: custom autograd.Function given the same tensor twice gets half the gradient when compiled.
Area: autograd-hooks. Backend: aot_eager. Symptom: silent.
F.apply(x, x) must accumulate the grads of both input slots into x; the compiled path kept only one slot's
contribution, giving half of eager's gradient.
Written from the issue's description."""

import sys

import torch


class F(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b + a + b

    @staticmethod
    def backward(ctx, go):
        a, b = ctx.saved_tensors
        return go * (b + 1), go * (a + 1)


def fn(x):
    return F.apply(x, x).sum()


def run(f):
    x = torch.tensor([0.7, -1.3, 2.1, 0.05], requires_grad=True)
    f(x).backward()
    return x.grad


e = run(fn)
try:
    c = run(torch.compile(fn, backend="aot_eager"))
except Exception as ex:
    print("compiled raised", type(ex).__name__, str(ex).splitlines()[0])
    sys.exit(1)
print("eager x.grad:", e, "\ncompiled x.grad:", c)
sys.exit(0 if torch.allclose(e, c) else 1)
