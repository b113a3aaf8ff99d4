"""pytorch/pytorch#183603: second-order gradient of a compiled function that calls autograd.grad(create_graph=True) fails.
Area: autograd-hooks. Backend: aot_eager. Symptom: crash.
The inner autograd.grad is traced into the compiled graph; its result cannot be differentiated again
outside, so the second derivative raises where eager returns 12*x**2.
Written from the issue's description."""

import sys

import torch


def fn(x):
    return torch.autograd.grad((x**4).sum(), x, create_graph=True)[0]


def run(f):
    x = torch.tensor([0.5, 1.5, 2.5], requires_grad=True)
    return torch.autograd.grad(f(x).sum(), x)[0]


e = run(fn)
try:
    c = run(torch.compile(fn, backend="aot_eager"))
except Exception as ex:
    print("eager d2:", e)
    print("compiled raised", type(ex).__name__, str(ex).splitlines()[0])
    sys.exit(1)
print("eager d2:", e, "\ncompiled d2:", c)
sys.exit(0 if torch.allclose(e, c) else 1)
