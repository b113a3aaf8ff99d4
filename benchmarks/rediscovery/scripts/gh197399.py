"""pytorch/pytorch#197399: x.set_(y) rebinding an empty tensor onto a 1-element slice, then x[0], fails to compile.
Area: metadata-mutation. Backend: aot_eager. Symptom: crash.
After set_, x has y's storage and shape (1,); AOTAutograd's trace still sees x as size 0, so the
following index raises "index 0 is out of bounds" at compile time while eager returns 2.
Written from the issue's description."""

import sys

import torch


def fn(base):
    y = base[1:, 0]
    x = torch.empty(0)
    x.set_(y)
    return x[0]


def make():
    return torch.tensor([[0.0, 1.0], [2.0, 3.0]])


oe = fn(make())
print("eager   :", oe.item())
try:
    oc = torch.compile(fn, backend="aot_eager")(make())
except Exception as e:
    print("compiled raised", type(e).__name__, str(e).splitlines()[0])
    sys.exit(1)
print("compiled:", oc.item())
sys.exit(0 if torch.equal(oe, oc) else 1)
