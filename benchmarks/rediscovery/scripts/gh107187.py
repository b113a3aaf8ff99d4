"""pytorch/pytorch#107187: torch.manual_seed inside a compiled function is ignored.
Area: rng. Backend: aot_eager. Symptom: silent.
manual_seed is invisible to the AOT graph, so the compiled function does not reseed and two calls
return different draws, where eager reseeds and returns the same four numbers each call.
Written from the issue's description."""

import sys

import torch


def fn():
    torch.manual_seed(3)
    return torch.rand(4)


e = [fn(), fn()]
try:
    cf = torch.compile(fn, backend="aot_eager")
    c = [cf(), cf()]
except Exception as ex:
    print("compiled raised", type(ex).__name__, str(ex).splitlines()[0])
    sys.exit(1)
print("eager calls:", e, "\ncompiled calls:", c)
sys.exit(0 if all(torch.equal(a, b) for a, b in zip(e, c)) else 1)
