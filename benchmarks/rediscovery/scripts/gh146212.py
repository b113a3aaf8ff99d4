"""pytorch/pytorch#146212: retain_grad() called on an input inside a compiled function is ignored.
Area: autograd-hooks. Backend: aot_eager. Symptom: silent.
The traced retain_grad call on a non-leaf graph input is dropped by AOTAutograd, so after backward
the input's .grad stays None where eager fills it.
Written from the issue's description."""

import sys

import torch


def fn(x, y):
    y.retain_grad()
    return torch.sin(y) + x


def run(f):
    torch.manual_seed(0)
    x = torch.randn(4, requires_grad=True)
    y = torch.cos(x)
    f(x, y).sum().backward()
    return y.grad


e = run(fn)
try:
    c = run(torch.compile(fn, backend="aot_eager"))
except Exception as ex:
    print("compiled raised", type(ex).__name__, str(ex).splitlines()[0])
    sys.exit(1)
print("eager y.grad:", e, "\ncompiled y.grad:", c)
sys.exit(0 if (c is not None and torch.allclose(e, c)) else 1)
