"""pytorch/pytorch#97130: write through one alias inside a nested function is missing from another alias.
Area: views-aliasing. Backend: inductor. Symptom: silent.
b = a.reshape(2) and c = a[0:2] share storage; a closure writes b[0] and then a data-dependent branch
forces a graph break; the returned c must show the write.
Written from the issue's description."""

import sys

import torch


def fn():
    a = torch.ones(2)
    b = a.reshape(2)
    c = a[0:2]

    def sub():
        b[0] = 2
        if b.sum() >= -1e5:
            pass

    sub()
    return c


eager = fn()
try:
    comp = torch.compile(fn, backend="inductor")()
except Exception as e:
    print("compiled raised", type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    sys.exit(1)
print("eager:", eager.tolist(), "compiled:", comp.tolist())
sys.exit(0 if torch.equal(eager, comp) else 1)
