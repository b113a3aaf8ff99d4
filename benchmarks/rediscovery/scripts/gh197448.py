"""pytorch/pytorch#197448: fill_ through an expanded view of an input gives a different input under compile.
Area: views-aliasing. Backend: inductor. Symptom: silent.
v = base.expand(3, -1); v.fill_(2.0) writes 2 into each element of base in eager; functionalization
turns the write into a scatter back from a 3-row buffer and the input ends up with other values.
Written from the issue's description."""

import sys

import torch


def fn(base):
    v = base.expand(3, -1)
    v.fill_(2.0)
    return base


x = torch.tensor([-1.0, -0.5, 0.0, 0.5])
xe, xc = x.clone(), x.clone()
eager = fn(xe)
try:
    comp = torch.compile(fn, backend="inductor")(xc)
except Exception as e:
    print("compiled raised", type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    sys.exit(1)
print("eager   :", eager.tolist(), "input", xe.tolist())
print("compiled:", comp.tolist(), "input", xc.tolist())
sys.exit(0 if torch.equal(eager, comp) and torch.equal(xe, xc) else 1)
