"""pytorch/pytorch#123713: requires_grad_() on a value computed under no_grad inside a compiled function is lost.
Area: autograd-hooks. Backend: aot_eager. Symptom: silent.
The intermediate made under no_grad is turned into a leaf with requires_grad_() and fed to a second
layer; compiled, the flag did not stick, so the loss could not reach the second layer's weight.
Written from the issue's description."""

import sys

import torch

torch.manual_seed(0)
m1, m2 = torch.nn.Linear(2, 4), torch.nn.Linear(4, 1)


def fn(x):
    with torch.no_grad():
        h = m1(x)
    h.requires_grad_()
    return m2(h).pow(2).mean(), h.requires_grad


def run(f):
    m2.weight.grad = None
    loss, flag = f(torch.ones(3, 2))
    loss.backward()
    return flag, m2.weight.grad


e = run(fn)
try:
    c = run(torch.compile(fn, backend="aot_eager"))
except Exception as ex:
    print("compiled raised", type(ex).__name__, str(ex).splitlines()[0])
    sys.exit(1)
print("eager (h.requires_grad, m2.weight.grad):", e, "\ncompiled:", c)
sys.exit(0 if e[0] == c[0] and torch.allclose(e[1], c[1]) else 1)
