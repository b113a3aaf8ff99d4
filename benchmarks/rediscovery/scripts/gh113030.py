"""pytorch/pytorch#113030: after `x.data = y; y.data = empty`, compiled code also empties x.
Area: metadata-mutation. Backend: aot_eager. Symptom: silent.
Eager `x.data = y` makes x share y's old storage, and a later `y.data = ...` only rebinds y;
compiled, the two .data assignments (traced as set_) make x follow y's second assignment too.
Written from the issue's description."""

import sys

import torch


def fn(x, y):
    x.data = y
    y.data = torch.zeros(0)
    return x


BACKEND = "aot_eager"
torch.manual_seed(0)
a, b = torch.rand(6), torch.rand(6)
xe, ye = a.clone(), b.clone()
fn(xe, ye)
xc, yc = a.clone(), b.clone()
try:
    torch.compile(fn, backend=BACKEND)(xc, yc)
except Exception as e:
    print("compiled raised", type(e).__name__, str(e).splitlines()[0])
    sys.exit(1)
print("eager   : x", xe.tolist(), "y", ye.tolist())
print("compiled: x", xc.tolist(), "y", yc.tolist())
ok = xe.shape == xc.shape and torch.equal(xe, xc) and ye.shape == yc.shape
sys.exit(0 if ok else 1)
