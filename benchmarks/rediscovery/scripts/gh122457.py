"""pytorch/pytorch#122457: Inductor buffer reuse clobbers a view_as_real of a complex view.
Area: views-aliasing. Backend: inductor. Symptom: silent.
z = view_as_complex(x + 1) and a = view_as_real(z) share one buffer; Inductor reused that buffer
for another result while `a` was still needed.
Written from the issue's description."""

import sys

import torch


def fn(x):
    z = torch.view_as_complex(x + 1)
    a = torch.view_as_real(z)
    return a + 1, torch.view_as_real(z + 1)


x = torch.zeros(4, 2)
eager = fn(x.clone())
try:
    comp = torch.compile(fn, backend="inductor")(x.clone())
except Exception as e:
    print("compiled raised", type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    sys.exit(1)
print("eager   :", [t.flatten().tolist() for t in eager])
print("compiled:", [t.flatten().tolist() for t in comp])
sys.exit(0 if all(torch.equal(a, b) for a, b in zip(eager, comp)) else 1)
