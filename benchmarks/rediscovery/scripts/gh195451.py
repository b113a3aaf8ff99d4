"""pytorch/pytorch#195451: slice_scatter then x.copy_(updated) returns the mutated input itself under Inductor, not a fresh tensor.
Area: input-mutation. Backend: inductor. Symptom: silent.
Inductor reinplaces the scatter into the input and returns that buffer, so the output aliases x;
a later in-place update of the returned tensor then silently changes x too (eager: independent).
Written from the issue's description."""

import sys

import torch


def fn(x, src):
    updated = torch.slice_scatter(x, src, 0, 0, 1)
    x.copy_(updated)
    return updated


def run(f):
    x = torch.tensor([1.0, 2.0])
    out = f(x, torch.tensor([10.0]))
    before = x.clone()
    out.add_(100.0)
    return before, x, out


be, xe, oe = run(fn)
try:
    bc, xc, oc = run(torch.compile(fn, backend="inductor", fullgraph=True))
except Exception as e:
    print("compiled raised", type(e).__name__, str(e).splitlines()[0])
    sys.exit(1)
print("eager   : x after call", be.tolist(), "x after out.add_", xe.tolist())
print("compiled: x after call", bc.tolist(), "x after out.add_", xc.tolist())
sys.exit(0 if torch.equal(be, bc) and torch.equal(xe, xc) and torch.equal(oe, oc) else 1)
