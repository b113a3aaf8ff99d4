"""pytorch/pytorch#183894: argmin over a transpose view of an input mutated in place gives a wrong index.
Area: views-aliasing. Backend: inductor. Symptom: silent.
x.sin_() then x.t().argmin(): the flat index must follow the transposed view's order; the
compiled kernel returned the index in the base's order.
Written from the issue's description."""

import sys

import torch


def fn(x):
    x.sin_()
    return x.t().argmin()


torch.manual_seed(21)
x = torch.randn(5, 7)
xe, xc = x.clone(), x.clone()
eager = fn(xe)
try:
    comp = torch.compile(fn, backend="inductor")(xc)
except Exception as e:
    print("compiled raised", type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    sys.exit(1)
print("eager:", eager.item(), "compiled:", comp.item())
sys.exit(0 if torch.equal(eager, comp) and torch.allclose(xe, xc) else 1)
