"""pytorch/pytorch#191821: a nested_compile_region reads a global that the caller rebinds in a loop.
Area: graph-breaks. Backend: eager. Symptom: silent.
The region is traced once and reused for the second loop iteration, so it keeps reading the global
object bound in the first iteration instead of the rebound one.
Written from the issue's description."""

import sys

import torch


class Box:
    def __init__(self, t):
        self.t = t


box = Box(torch.tensor(0))


@torch.compiler.nested_compile_region
def region():
    return box.t + 1


def fn(h):
    global box
    for _ in range(2):
        box = Box(h)
        h = region()
    return h


eager = fn(torch.tensor(0))
try:
    comp = torch.compile(fn, backend="eager", fullgraph=True)(torch.tensor(0))
except Exception as e:
    print("compiled raised", type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    sys.exit(1)
print("eager:", eager.item(), "compiled:", comp.item())
sys.exit(0 if torch.equal(eager, comp) else 1)
