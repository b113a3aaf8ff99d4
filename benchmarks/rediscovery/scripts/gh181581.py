"""pytorch/pytorch#181581: autograd.grad(create_graph=True) on a compiled output returns a grad without grad_fn.
Area: autograd-hooks. Backend: aot_eager. Symptom: metadata.
The compiled backward skipped its double-backward wrapper, so the first-order gradient came back with
requires_grad=False and grad_fn=None where eager returns a differentiable gradient.
Written from the issue's description."""

import sys

import torch


def fn(x, w):
    return torch.relu(x @ w) ** 2


def run(f):
    torch.manual_seed(0)
    x, w = torch.randn(3, 4, requires_grad=True), torch.randn(4, 2, requires_grad=True)
    (g,) = torch.autograd.grad(f(x, w).sum(), x, create_graph=True)
    return g.requires_grad, g.grad_fn is not None


e = run(fn)
try:
    c = run(torch.compile(fn, backend="aot_eager"))
except Exception as ex:
    print("compiled raised", type(ex).__name__, str(ex).splitlines()[0])
    sys.exit(1)
print("eager (requires_grad, has grad_fn):", e, "\ncompiled:", c)
sys.exit(0 if e == c else 1)
