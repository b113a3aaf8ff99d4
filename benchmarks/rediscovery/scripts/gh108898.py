"""pytorch/pytorch#108898: no guard on a global helper function, so rebinding it reuses the old graph.
Area: graph-breaks. Backend: aot_eager. Symptom: silent.
The compiled function inlines a module-level helper; after the helper name is rebound to another
function, the cached graph keeps computing with the old body.
Written from the issue's description."""

import sys

import torch


def helper(x):
    return torch.sin(x) + 20


def fn(x, y):
    return helper(x) + y


x, y = torch.ones(1), torch.ones(1)
opt = torch.compile(fn, fullgraph=True, backend="aot_eager")
opt(x, y)
helper = lambda x: torch.cos(x)
eager = fn(x, y)
try:
    comp = opt(x, y)
except Exception as e:
    print("compiled raised", type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    sys.exit(1)
print("eager:", eager.tolist(), "compiled:", comp.tolist())
sys.exit(0 if torch.allclose(eager, comp) else 1)
