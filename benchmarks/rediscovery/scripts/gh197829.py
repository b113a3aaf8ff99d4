"""pytorch/pytorch#197829: the in-place row shift `x[1:] = x[:-1].clone()` becomes a copy over overlapping memory under Inductor.
Area: inplace. Backend: inductor. Symptom: silent.
Inductor drops the clone, so the kernel reads rows of x that it has already overwritten; on CPU
row 0 ends up copied into every row.
Written from the issue's description."""

import sys

import torch


def fn(x):
    x[1:] = x[:-1].clone()
    return x


torch.manual_seed(0)
base = torch.rand(3, 16, 16)
xe = base.clone()
fn(xe)
xc = base.clone()
try:
    torch.compile(fn, backend="inductor")(xc)
except Exception as e:
    print("compiled raised", type(e).__name__, str(e).splitlines()[0])
    sys.exit(1)
print("eager   : row sums", [round(v, 3) for v in xe.sum((1, 2)).tolist()])
print("compiled: row sums", [round(v, 3) for v in xc.sum((1, 2)).tolist()])
print("wrong elements:", int((xe != xc).sum()), "of", xe.numel())
sys.exit(0 if torch.equal(xe, xc) else 1)
