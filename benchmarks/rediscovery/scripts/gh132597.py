"""pytorch/pytorch#132597: storing x.std() on the module and then x[i] = linear(x[i]) trains in eager but fails to compile.
Area: inplace. Backend: aot_eager. Symptom: crash.
The indexed assignment mutates x, which std's backward saved; eager never runs that backward (the loss
does not use std), but AOTAutograd traces it for the escaping std output and fails at compile time.
Written from the issue's description."""

import sys

import torch
import torch.nn.functional as F


class L(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.a = torch.nn.Linear(d, d, bias=False)
        self.b = torch.nn.Linear(d, d, bias=False)

    def forward(self, x, i):
        x = self.a(x)
        self.std = x.std()
        x[i] = self.b(x[i])
        return x


def run(compile_):
    torch.manual_seed(0)
    x, y, m = torch.randn(5, 8), torch.randn(5, 8), L(8)
    f = torch.compile(m, backend="aot_eager") if compile_ else m
    F.mse_loss(f(x, torch.tensor([1, 2])), y).backward()
    return [p.grad for p in m.parameters()]


ge = run(False)
print("eager   : grad sums", [round(g.sum().item(), 5) for g in ge])
try:
    gc = run(True)
except Exception as e:
    msg = [ln for ln in str(e).splitlines() if ln.strip()]
    print("compiled raised", type(e).__name__, " | ".join(msg[:2])[:300])
    sys.exit(1)
print("compiled: grad sums", [round(g.sum().item(), 5) for g in gc])
sys.exit(0 if all(torch.allclose(a, b) for a, b in zip(ge, gc)) else 1)
