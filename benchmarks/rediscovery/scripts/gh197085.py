"""pytorch/pytorch#197085: random.shuffle inside a compiled function returns the same permutation on every call.
Area: rng. Backend: eager. Symptom: silent.
Dynamo computes the shuffle at trace time and bakes the order into the graph, so later calls replay it
while eager draws a fresh permutation from the global Python RNG each call.
Written from the issue's description."""

import random
import sys

import torch


def fn(x):
    idx = list(range(8))
    random.shuffle(idx)
    return x[idx]


x = torch.arange(8.0)
random.seed(0)
e = [fn(x) for _ in range(3)]
random.seed(0)
try:
    cf = torch.compile(fn, backend="eager")
    c = [cf(x) for _ in range(3)]
except Exception as ex:
    print("compiled raised", type(ex).__name__, str(ex).splitlines()[0])
    sys.exit(1)
print("eager calls:", e, "\ncompiled calls:", c)
sys.exit(0 if all(torch.equal(a, b) for a, b in zip(e, c)) else 1)
