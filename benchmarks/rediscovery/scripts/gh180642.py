"""pytorch/pytorch#180642: an in-place op inside a custom autograd.Function forward misroutes its gradient when compiled.
Area: autograd-hooks. Backend: aot_eager. Symptom: crash.
With an in-place += and a side effect (list append) in forward, Dynamo returned the pre-mutation alias as an
extra output and misrouted the gradient (zeros); it now refuses the function where eager runs.
Written from the issue's description."""

import sys

import torch

seen = []


class F(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = x * 2
        seen.append(y)
        y += 1
        return y

    @staticmethod
    def backward(ctx, g):
        return g * 3


def run(f):
    x = torch.ones(4, requires_grad=True)
    f(x).sum().backward()
    return x.grad


fn = lambda x: F.apply(x)
e = run(fn)
try:
    c = run(torch.compile(fn, backend="aot_eager"))
except Exception as ex:
    print("compiled raised", type(ex).__name__, str(ex).splitlines()[0])
    sys.exit(1)
print("eager x.grad:", e, "\ncompiled x.grad:", c)
sys.exit(0 if c is not None and torch.allclose(e, c) else 1)
