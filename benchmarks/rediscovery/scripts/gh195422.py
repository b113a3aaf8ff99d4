"""pytorch/pytorch#195422: an in-place add through the tensor that eval-mode F.dropout returns is lost for the input.
Area: inplace. Backend: aot_eager. Symptom: silent.
F.dropout(x, training=False) returns x itself, so `y += y` mutates the caller's x in eager; the
traced graph treats the no-op dropout result as a new tensor (a copy), so the add never reaches the input.
Written from the issue's description."""

import sys

import torch


def fn(x):
    y = torch.nn.functional.dropout(x, 0.5, False)
    y += y
    return y * 1


BACKEND = "aot_eager"
xe = torch.ones(2, 2)
oe = fn(xe)
xc = torch.ones(2, 2)
try:
    oc = torch.compile(fn, backend=BACKEND)(xc)
except Exception as e:
    print("compiled raised", type(e).__name__, str(e).splitlines()[0])
    sys.exit(1)
print("eager   : out", oe.flatten().tolist(), "input", xe.flatten().tolist())
print("compiled: out", oc.flatten().tolist(), "input", xc.flatten().tolist())
sys.exit(0 if torch.equal(oe, oc) and torch.equal(xe, xc) else 1)
