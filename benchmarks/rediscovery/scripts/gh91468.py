"""pytorch/pytorch#91468: a hook registered on an intermediate after a graph break is ignored by autograd.grad.
Area: autograd-hooks. Backend: aot_eager. Symptom: silent.
y is computed in the first compiled graph, which hands it out as an output of one opaque autograd node;
the hook registered on y after the break never scales the gradient that autograd.grad(z, x) routes
through y (eager 9.28, compiled 5.0). The issue's retain_grad example now graph-breaks and matches.
Written from the issue's description."""

import sys

import torch


def fn(x):
    y = x * x
    z = y * x * x * x
    print("graph break")
    y.register_hook(lambda g: g if g is None else 3.14 * g)
    return torch.autograd.grad(z, x)[0]


e = fn(torch.tensor(1.0, requires_grad=True))
try:
    c = torch.compile(fn, backend="aot_eager")(torch.tensor(1.0, requires_grad=True))
except Exception as ex:
    print("compiled raised", type(ex).__name__, str(ex).splitlines()[0])
    sys.exit(1)
print("eager dz/dx:", e, "\ncompiled dz/dx:", c)
sys.exit(0 if torch.allclose(e, c) else 1)
