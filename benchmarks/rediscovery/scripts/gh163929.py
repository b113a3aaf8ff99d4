"""pytorch/pytorch#163929: argmin over a transposed view of an input mutated by tan_ gives the wrong index.
Area: inplace. Backend: inductor. Symptom: silent.
The in-place tan_ on the input is followed by x.t() and a full argmin; Inductor's fused kernel
indexes the transposed, mutated buffer in the wrong order.
Written from the issue's description."""

import sys

import torch


def fn(x):
    x.tan_()
    x = x.t()
    return x.argmin()


torch.manual_seed(0)
base = torch.randn(4, 6)
xe = base.clone()
oe = fn(xe)
xc = base.clone()
try:
    oc = torch.compile(fn, backend="inductor")(xc)
except Exception as e:
    print("compiled raised", type(e).__name__, str(e).splitlines()[0])
    sys.exit(1)
print("eager   : argmin", oe.item())
print("compiled: argmin", oc.item(), "inputs equal", torch.allclose(xe, xc))
sys.exit(0 if oe.item() == oc.item() and torch.allclose(xe, xc) else 1)
