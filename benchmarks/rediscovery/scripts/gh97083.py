"""pytorch/pytorch#97083: a squeezed view taken before writes to its base returns the old value after compile.
Area: inplace. Backend: inductor. Symptom: silent.
b = a.squeeze() aliases a; the later index writes a[0] = 0 and a[0] = 2 (split by a data-dependent
branch) must show through b, but the compiled result returned the intermediate value.
Written from the issue's description."""

import sys

import torch


def fn():
    a = torch.tensor([1])
    a = a[0:1]
    b = a.squeeze()
    a[0] = 0
    if a[0] < 1e5:
        pass
    a[0] = 2
    return b


BACKEND = "inductor"
with torch.no_grad():
    oe = fn()
    try:
        oc = torch.compile(fn, backend=BACKEND)()
    except Exception as e:
        print("compiled raised", type(e).__name__, str(e).splitlines()[0])
        sys.exit(1)
print("eager   :", oe.item())
print("compiled:", oc.item())
sys.exit(0 if oe.item() == oc.item() else 1)
