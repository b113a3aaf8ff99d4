"""pytorch/pytorch#100977: an inference graph compiled under no_grad is reused when grad is enabled.
Area: autograd-hooks. Backend: aot_eager. Symptom: silent.
Guards merged requires_grad with grad mode and did not check module parameters, so the second call
(grad on) reused the no_grad graph and the parameter received no gradient.
Written from the issue's description."""

import sys

import torch


def run(compile_it):
    torch.manual_seed(0)
    m = torch.nn.Linear(3, 3)
    f = torch.compile(m, backend="aot_eager") if compile_it else m
    x = torch.randn(2, 3)
    with torch.no_grad():
        f(x)
    out = f(x)
    if not out.requires_grad:
        return None
    out.sum().backward()
    return m.weight.grad


e = run(False)
try:
    c = run(True)
except Exception as ex:
    print("compiled raised", type(ex).__name__, str(ex).splitlines()[0])
    sys.exit(1)
print("eager weight.grad:", e, "\ncompiled weight.grad:", c)
sys.exit(0 if c is not None and torch.allclose(e, c) else 1)
