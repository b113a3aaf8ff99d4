"""pytorch/pytorch#118735: a compiled function mixing a seeded Generator and torch.manual_seed draws other numbers.
Area: rng. Backend: aot_eager. Symptom: silent.
The function seeds a private Generator and the default generator with the same seed; eager gets the same
draw twice, the compiled function ignored the in-graph manual_seed for the default generator.
Written from the issue's description."""

import sys

import torch


def fn():
    g = torch.Generator().manual_seed(42)
    t1 = torch.rand(1, generator=g)
    torch.manual_seed(42)
    t2 = torch.rand(1)
    return torch.cat([t1, t2])


torch.manual_seed(0)
e = fn()
torch.manual_seed(0)
try:
    c = torch.compile(fn, backend="aot_eager")()
except Exception as ex:
    print("compiled raised", type(ex).__name__, str(ex).splitlines()[0])
    sys.exit(1)
print("eager:", e, "\ncompiled:", c)
sys.exit(0 if torch.equal(e, c) else 1)
