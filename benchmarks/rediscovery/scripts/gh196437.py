"""pytorch/pytorch#196437: with dynamic=True a random.Random draw is reused after a shape specialization.
Area: rng. Backend: eager. Symptom: silent.
Across inputs of shapes [1], [1,5], [2,2], [2,3] eager takes four successive randint values; the
dynamic-shape cache path replays the third value on the fourth call.
Written from the issue's description."""

import random
import sys

import torch


def fn(x, rng):
    return x.sum() + rng.randint(1, 100)


shapes = [(1,), (1, 5), (2, 2), (2, 3)]
r1, r2 = random.Random(0), random.Random(0)
e = [fn(torch.zeros(s), r1).item() for s in shapes]
try:
    cf = torch.compile(fn, backend="eager", dynamic=True)
    c = [cf(torch.zeros(s), r2).item() for s in shapes]
except Exception as ex:
    print("compiled raised", type(ex).__name__, str(ex).splitlines()[0])
    sys.exit(1)
print("eager draws:", e, "\ncompiled draws:", c)
sys.exit(0 if e == c else 1)
