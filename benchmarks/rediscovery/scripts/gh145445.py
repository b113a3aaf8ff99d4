"""pytorch/pytorch#145445: a random.Random object passed to a compiled function repeats its draw on later calls.
Area: rng. Backend: eager. Symptom: silent.
Dynamo replays rng.randint from the state captured at trace time, so the second and third calls return
the same number as the first and the object's state does not advance as it does in eager.
Written from the issue's description."""

import random
import sys

import torch


def fn(x, rng):
    return x + rng.randint(1, 100)


x = torch.zeros(2)
r1, r2 = random.Random(0), random.Random(0)
e = [fn(x, r1) for _ in range(3)]
try:
    cf = torch.compile(fn, backend="eager", fullgraph=True)
    c = [cf(x, r2) for _ in range(3)]
except Exception as ex:
    print("compiled raised", type(ex).__name__, str(ex).splitlines()[0])
    sys.exit(1)
print("eager calls:", e, "\ncompiled calls:", c)
same = all(torch.equal(a, b) for a, b in zip(e, c)) and r1.getstate() == r2.getstate()
sys.exit(0 if same else 1)
