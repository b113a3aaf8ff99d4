"""pytorch/pytorch#197893: Inductor returns the input itself for `buf * momentum` with momentum=1.0, so an in-place update of the result corrupts the input.
Area: inplace. Backend: inductor. Symptom: silent.
A joint-graph no-op removal replaces `x * 1.0` by x without checking for new input/output aliasing;
the caller's later `out.add_(g)` then also writes into buf (eager returns a fresh tensor).
Written from the issue's description."""

import sys

import torch


def momentum_step(buf, momentum):
    return buf * momentum


def run(f):
    buf = torch.ones(4)
    out = f(buf, 1.0)
    out.add_(torch.full((4,), 0.5))
    return buf, out, out is buf


be, oe, ie = run(momentum_step)
try:
    bc, oc, ic = run(torch.compile(momentum_step, backend="inductor"))
except Exception as e:
    print("compiled raised", type(e).__name__, str(e).splitlines()[0])
    sys.exit(1)
print("eager   : buf after out.add_", be.tolist(), "out is buf", ie)
print("compiled: buf after out.add_", bc.tolist(), "out is buf", ic)
sys.exit(0 if torch.equal(be, bc) and torch.equal(oe, oc) else 1)
