"""pytorch/pytorch#132929: autograd.grad of one compiled output with respect to another compiled output fails.
Area: autograd-hooks. Backend: aot_eager. Symptom: crash.
AOTAutograd wraps all graph outputs as siblings of one autograd node, so the edge from output z to
output dec is hidden; autograd.grad(dec, z) finds z unused where eager computes the gradient.
Written from the issue's description."""

import sys

import torch


def fn(x, w1, w2):
    z = x @ w1
    return z @ w2, z


def run(f):
    torch.manual_seed(0)
    x, w1, w2 = (
        torch.randn(2, 3),
        torch.randn(3, 4, requires_grad=True),
        torch.randn(4, 3, requires_grad=True),
    )
    dec, z = f(x, w1, w2)
    return torch.autograd.grad(dec.sum(), z)[0]


e = run(fn)
try:
    c = run(torch.compile(fn, backend="aot_eager"))
except Exception as ex:
    print("eager grad:", e)
    print("compiled raised", type(ex).__name__, str(ex).splitlines()[0])
    sys.exit(1)
print("eager grad:", e, "\ncompiled grad:", c)
sys.exit(0 if torch.allclose(e, c) else 1)
