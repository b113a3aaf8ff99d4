"""pytorch/pytorch#90844: an in-place update of a leaf requiring grad under no_grad fails when compiled.
Area: views-aliasing. Backend: aot_eager. Symptom: crash.
The user wraps x.add_(1) in torch.no_grad(); AOTAutograd's epilogue copied the new value back into x
outside no_grad, raising "a leaf Variable that requires grad is being used in an in-place operation".
Written from the issue's description."""

import sys

import torch


def fn(x):
    with torch.no_grad():
        x.add_(1)
    return x * 2


xe = torch.zeros(2, requires_grad=True)
xc = torch.zeros(2, requires_grad=True)
eager = fn(xe)
try:
    comp = torch.compile(fn, backend="aot_eager")(xc)
except Exception as e:
    print("compiled raised", type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    sys.exit(1)
print("eager:", eager.tolist(), xe.tolist(), "compiled:", comp.tolist(), xc.tolist())
sys.exit(0 if torch.equal(eager, comp) and torch.equal(xe, xc) else 1)
