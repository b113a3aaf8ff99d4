"""pytorch/pytorch#198280: in-place transpose x.copy_(x.transpose(-1, -2) * 1.0) gives wrong values.
Area: views-aliasing. Backend: inductor. Symptom: silent.
The copy back into x fuses with the transposed read of x after loop reordering, so some elements are
read after they were already overwritten (reported on CUDA at shape (80000, 5, 5)).
Written from the issue's description."""

import sys

import torch


def fn(x):
    x.copy_(x.transpose(-1, -2) * 1.0)
    return x


torch.manual_seed(0)
x = torch.rand(80000, 5, 5)
want = fn(x.clone())
try:
    got = torch.compile(fn, backend="inductor")(x.clone())
except Exception as e:
    print("compiled raised", type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    sys.exit(1)
bad = int((got != want).sum())
print("wrong elements:", bad)
sys.exit(0 if bad == 0 else 1)
