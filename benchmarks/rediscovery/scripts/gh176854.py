"""pytorch/pytorch#176854: detach_() on an intermediate does not clear requires_grad under compile.
Area: views-aliasing. Backend: eager. Symptom: metadata.
y = x * 2; y.detach_() must turn y into a leaf that does not require grad; the compiled function
reports y.requires_grad as True, so the in-place detach is lost.
Written from the issue's description."""

import sys

import torch


def fn(x):
    y = x * 2.0
    y.detach_()
    z = y + 1.0
    return z, y.requires_grad


x = torch.arange(4.0, requires_grad=True)
ze, rge = fn(x)
try:
    zc, rgc = torch.compile(fn, backend="eager")(x)
except Exception as e:
    print("compiled raised", type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    sys.exit(1)
print("eager   : y.requires_grad =", rge, "z.requires_grad =", ze.requires_grad)
print("compiled: y.requires_grad =", rgc, "z.requires_grad =", zc.requires_grad)
ok = rge == rgc and ze.requires_grad == zc.requires_grad and torch.equal(ze.detach(), zc.detach())
sys.exit(0 if ok else 1)
