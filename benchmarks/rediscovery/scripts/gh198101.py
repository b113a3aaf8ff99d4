"""pytorch/pytorch#198101: Inductor reads a dtype view of an input after a later in-place write to that input.
Area: views-aliasing. Backend: inductor. Symptom: silent.
y is computed from x.view(int32) and x is then partly overwritten; Inductor schedules the read of x after
the write, so the returned y reflects the mutated x.
Written from the issue's description."""

import sys

import torch


def fn(x):
    y = x.view(torch.int32) * 2
    y.sub_(-4)
    x[:, 2:5] = 2
    return y.view(torch.int64)


x = torch.arange(-12, 12, dtype=torch.int64).reshape(4, 6)
xe, xc = x.clone(), x.clone()
eager = fn(xe)
try:
    comp = torch.compile(fn, backend="inductor")(xc)
except Exception as e:
    print("compiled raised", type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    sys.exit(1)
print("eager   :", eager.flatten()[:6].tolist())
print("compiled:", comp.flatten()[:6].tolist())
ok = torch.equal(eager, comp) and torch.equal(xe, xc)
print("match" if ok else "MISMATCH")
sys.exit(0 if ok else 1)
