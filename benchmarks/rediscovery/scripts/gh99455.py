"""pytorch/pytorch#99455: a leaf created with requires_grad=True inside a compiled function loses requires_grad.
Area: autograd-hooks. Backend: aot_eager. Symptom: metadata.
randn(..., requires_grad=True) inside the graph is a graph intermediate to AOTAutograd, so both the
returned leaf and the value computed from it come back without requires_grad.
Written from the issue's description."""

import sys

import torch


def fn():
    x = torch.randn(5, 5, requires_grad=True)
    return x, x + 2


def run(f):
    torch.manual_seed(0)
    x, y = f()
    return x.requires_grad, y.requires_grad


e = run(fn)
try:
    c = run(torch.compile(fn, backend="aot_eager"))
except Exception as ex:
    print("compiled raised", type(ex).__name__, str(ex).splitlines()[0])
    sys.exit(1)
print("eager (x, y).requires_grad:", e, "compiled:", c)
sys.exit(0 if e == c else 1)
