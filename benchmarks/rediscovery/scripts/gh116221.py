"""pytorch/pytorch#116221: saved_tensors_hooks around a compiled call are ignored.
Area: autograd-hooks. Backend: aot_eager. Symptom: silent.
An unpack hook that doubles saved tensors changes eager's gradients of a*b; the compiled graph saved
its tensors without running the hooks, so the gradients were the unhooked ones.
Written from the issue's description."""

import sys

import torch


def fn(a, b):
    return a * b


def run(f):
    a, b = torch.tensor(1.0, requires_grad=True), torch.tensor(2.0, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: 2 * t):
        y = f(a, b)
    y.backward()
    return torch.stack([a.grad, b.grad])


e = run(fn)
try:
    c = run(torch.compile(fn, backend="aot_eager"))
except Exception as ex:
    print("compiled raised", type(ex).__name__, str(ex).splitlines()[0])
    sys.exit(1)
print("eager (a.grad, b.grad):", e, "\ncompiled:", c)
sys.exit(0 if torch.allclose(e, c) else 1)
