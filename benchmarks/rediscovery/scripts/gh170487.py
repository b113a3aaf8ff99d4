"""pytorch/pytorch#170487: detach().requires_grad_(True) then autograd.grad inside a fullgraph compiled function.
Area: autograd-hooks. Backend: aot_eager. Symptom: crash.
Computing an input gradient inside the compiled region needs a fresh leaf; Dynamo could not trace
requires_grad_ plus autograd.grad. Under fullgraph it is still refused as unsupported; without fullgraph
it graph-breaks and matches eager.
Written from the issue's description."""

import sys

import torch

torch.manual_seed(0)
lin = torch.nn.Linear(3, 1)


def fn(x):
    with torch.enable_grad():
        x = x.detach().requires_grad_(True)
        return torch.autograd.grad(torch.tanh(lin(x)).sum(), x)[0]


x = torch.randn(4, 3)
e = fn(x.clone())
try:
    c = torch.compile(fn, backend="aot_eager")(x.clone())
except Exception as ex:
    print("compiled raised", type(ex).__name__, str(ex).splitlines()[0])
    sys.exit(1)
print("eager grad:", e, "\ncompiled grad:", c)
sys.exit(0 if torch.allclose(e, c) else 1)
