"""pytorch/pytorch#175156: inductor reorders two randint calls, swapping their draws.
Area: rng. Backend: inductor. Symptom: silent.
With fallback_random on, each randint consumes the global generator in program order; the
reorder_for_locality pass treated them as pure and could swap them, so the two results trade places.
Written from the issue's description."""

import sys

import torch
import torch._inductor.config

torch._inductor.config.fallback_random = True


def fn(x):
    a = torch.randint(0, 100, (8,))
    b = torch.randint(0, 100, (8,))
    return x + b, x + a


x = torch.zeros(8, dtype=torch.int64)
torch.manual_seed(0)
e = fn(x)
torch.manual_seed(0)
try:
    c = torch.compile(fn, backend="inductor")(x)
except Exception as ex:
    print("compiled raised", type(ex).__name__, str(ex).splitlines()[0])
    sys.exit(1)
print("eager:", e, "\ncompiled:", c)
sys.exit(0 if all(torch.equal(a, b) for a, b in zip(e, c)) else 1)
