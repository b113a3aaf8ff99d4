"""pytorch/pytorch#93363: in-place update of a strided view input that requires grad is lost under AOTAutograd.
Area: views-aliasing. Backend: aot_eager. Symptom: silent.
The input is a non-contiguous slice of a non-leaf tensor requiring grad; the compiled function must
write back a.add_(1) through the view into its base.
Written from the issue's description."""

import sys

import torch


def fn(a):
    a.add_(1.0)


be = torch.ones(4, requires_grad=True).add(0.0)
bc = torch.ones(4, requires_grad=True).add(0.0)
fn(be[0::2])
try:
    torch.compile(fn, backend="aot_eager")(bc[0::2])
except Exception as e:
    print("compiled raised", type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    sys.exit(1)
print("eager base   :", be.tolist())
print("compiled base:", bc.tolist())
sys.exit(0 if torch.equal(be, bc) else 1)
