"""pytorch/pytorch#136662: torch.func.grad of a function with two in-place adds into one slice is wrong under inductor.
Area: autograd-hooks. Backend: inductor. Symptom: silent.
g adds x[:, 2].abs() twice into y[:, 0]; the functorch-traced backward graph, once inductor compiles it,
counts only one of the two contributions, so the gradient is half of eager's.
Written from the issue's description."""

import sys

import torch


def g(x):
    y = torch.zeros_like(x)
    y[:, 0] += x[:, 2].abs()
    y[:, 0] += x[:, 2].abs()
    return y.sum()


def fn(x):
    return torch.func.grad(g)(x)


torch.manual_seed(0)
x = torch.randn(2, 3)
e = fn(x.clone())
try:
    c = torch.compile(fn, backend="inductor", fullgraph=True)(x.clone())
except Exception as ex:
    print("compiled raised", type(ex).__name__, str(ex).splitlines()[0])
    sys.exit(1)
print("eager grad:", e, "\ncompiled grad:", c)
sys.exit(0 if torch.allclose(e, c) else 1)
