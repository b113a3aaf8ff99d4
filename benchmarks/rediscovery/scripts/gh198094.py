"""pytorch/pytorch#198094: y = slice_scatter(x, src) followed by x.zero_() returns zeros under Inductor.
Area: input-mutation. Backend: inductor. Symptom: silent.
Inductor reinplaces the scatter into input x's buffer because a copy_ epilogue into x exists, but that
epilogue writes the zeros from the later x.zero_(), overwriting the returned scatter result.
Written from the issue's description."""

import sys

import torch


def fn(x, src):
    y = torch.slice_scatter(x, src[1:3], dim=0, start=1, end=3)
    x.zero_()
    return y


def make():
    return torch.arange(24).reshape(4, 6), torch.arange(-12, 12).reshape(4, 6)


xe, se = make()
oe = fn(xe, se)
xc, sc = make()
try:
    oc = torch.compile(fn, backend="inductor")(xc, sc)
except Exception as e:
    print("compiled raised", type(e).__name__, str(e).splitlines()[0])
    sys.exit(1)
print("eager   : y[:8]", oe.flatten()[:8].tolist(), "x sum", xe.sum().item())
print("compiled: y[:8]", oc.flatten()[:8].tolist(), "x sum", xc.sum().item())
sys.exit(0 if torch.equal(oe, oc) and torch.equal(xe, xc) else 1)
