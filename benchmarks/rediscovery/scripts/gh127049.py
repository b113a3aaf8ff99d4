"""pytorch/pytorch#127049: an int add_(1.5) inside try/except raises out of the compiled function instead of being caught.
Area: inplace. Backend: eager. Symptom: crash.
Eager raises a RuntimeError for the in-place int += float promotion, which the function catches;
Dynamo's fake-tensor run of add_ raises at trace time, outside the user's try block.
Written from the issue's description."""

import sys

import torch


def fn(x):
    try:
        x.add_(1.5)
    except Exception:
        return x + 1
    return x + 2


oe = fn(torch.ones(3, dtype=torch.int64))
print("eager   :", oe.tolist())
try:
    oc = torch.compile(fn, backend="eager")(torch.ones(3, dtype=torch.int64))
except Exception as e:
    print("compiled raised", type(e).__name__, str(e).splitlines()[0])
    sys.exit(1)
print("compiled:", oc.tolist())
sys.exit(0 if torch.equal(oe, oc) else 1)
