"""pytorch/pytorch#177652: randn_like of a non-contiguous input draws other numbers than eager under inductor.
Area: rng. Backend: inductor. Symptom: silent.
With fallback_random on, randn_like should draw eager's numbers in eager's layout; for a permuted input of
16 or more elements the compiled result is laid out differently from eager's.
Written from the issue's description."""

import sys

import torch
import torch._inductor.config

torch._inductor.config.fallback_random = True


def fn(x):
    torch.manual_seed(0)
    return torch.randn_like(x)


e = fn(torch.zeros(4, 5).permute(1, 0))
try:
    c = torch.compile(fn, backend="inductor")(torch.zeros(4, 5).permute(1, 0))
except Exception as ex:
    print("compiled raised", type(ex).__name__, str(ex).splitlines()[0])
    sys.exit(1)
print("eager:", e, "\ncompiled:", c)
sys.exit(0 if torch.equal(e, c) else 1)
