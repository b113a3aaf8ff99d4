"""pytorch/pytorch#94773: a view taken before `x.data = other` follows the new data under torch.compile.
Area: metadata-mutation. Backend: aot_eager. Symptom: silent.
In eager, xz = x[:] keeps the old storage after x.data is replaced; compiled, the .data assignment
is traced as set_ and the alias xz is treated as sharing x's new data and shape.
Written from the issue's description."""

import sys

import torch


def fn(x):
    xz = x[:]
    x.data = torch.ones(3, 4)
    return xz


BACKEND = "aot_eager"
torch.manual_seed(0)
base = torch.randn(2, 3)
xe = base.clone()
oe = fn(xe)
xc = base.clone()
try:
    oc = torch.compile(fn, backend=BACKEND)(xc)
except Exception as e:
    print("compiled raised", type(e).__name__, str(e).splitlines()[0])
    sys.exit(1)
print("eager   : xz", tuple(oe.shape), oe.flatten()[:3].tolist(), "x", tuple(xe.shape))
print("compiled: xz", tuple(oc.shape), oc.flatten()[:3].tolist(), "x", tuple(xc.shape))
ok = oe.shape == oc.shape and torch.equal(oe, oc) and torch.equal(xe, xc)
sys.exit(0 if ok else 1)
