"""pytorch/pytorch#139789: no recompile when a mutated input starts to overlap another input.
Area: views-aliasing. Backend: aot_eager. Symptom: silent.
The graph compiled for non-aliasing inputs (x.mul_(2); return x + y) is reused when x and y are
overlapping slices of one base, so y is read without seeing the write through x.
Written from the issue's description."""

import sys

import torch


def fn(x, y):
    x.mul_(2)
    return x + y


opt = torch.compile(fn, backend="aot_eager")
opt(torch.ones(4), torch.ones(4))
be, bc = torch.ones(8), torch.ones(8)
eager = fn(be[:4], be[2:6])
try:
    comp = opt(bc[:4], bc[2:6])
except Exception as e:
    print("compiled raised", type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    sys.exit(1)
print("eager   :", eager.tolist(), be.tolist())
print("compiled:", comp.tolist(), bc.tolist())
sys.exit(0 if torch.equal(eager, comp) and torch.equal(be, bc) else 1)
