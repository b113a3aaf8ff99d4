"""pytorch/pytorch#197101: random.seed() inside a compiled function is ignored on the first, compiling call.
Area: rng. Backend: eager. Symptom: silent.
Dynamo seeds its trace-time copy of Python's RNG, but the first call returns values drawn from the live,
unseeded stream; eager returns the seeded values on every call.
Written from the issue's description."""

import random
import sys

import torch


def fn(x):
    random.seed(0)
    return x + random.random()


x = torch.zeros(2)
random.seed(123)
e = [fn(x), fn(x)]
random.seed(123)
try:
    cf = torch.compile(fn, backend="eager")
    c = [cf(x), cf(x)]
except Exception as ex:
    print("compiled raised", type(ex).__name__, str(ex).splitlines()[0])
    sys.exit(1)
print("eager calls:", e, "\ncompiled calls:", c)
sys.exit(0 if all(torch.equal(a, b) for a, b in zip(e, c)) else 1)
