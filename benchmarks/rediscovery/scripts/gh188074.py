"""pytorch/pytorch#188074: torch.bernoulli(x) under inductor with fallback_random draws other values than eager.
Area: rng. Backend: inductor. Symptom: silent.
aten.bernoulli.default is still decomposed into rand() < x even with fallback_random on, which consumes
the generator differently from eager's native kernel, so the same seed yields another 0/1 pattern.
Written from the issue's description."""

import sys

import torch
import torch._inductor.config

torch._inductor.config.fallback_random = True


def fn(p):
    return torch.bernoulli(p)


p = torch.full((64,), 0.5)
torch.manual_seed(0)
e = fn(p)
torch.manual_seed(0)
try:
    c = torch.compile(fn, backend="inductor")(p)
except Exception as ex:
    print("compiled raised", type(ex).__name__, str(ex).splitlines()[0])
    sys.exit(1)
print(
    "eager ones:",
    int(e.sum()),
    "compiled ones:",
    int(c.sum()),
    "positions differing:",
    int((e != c).sum()),
)
sys.exit(0 if torch.equal(e, c) else 1)
