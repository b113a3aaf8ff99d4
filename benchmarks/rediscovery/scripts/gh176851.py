"""pytorch/pytorch#176851: no recompile after a class attribute read by the compiled function changes.
Area: graph-breaks. Backend: eager. Symptom: silent.
Dynamo bakes the float class attribute into the graph as a constant but installs no guard on it, so a
later call after the attribute is changed reuses the stale value.
Written from the issue's description."""

import sys

import torch


class State:
    factor = 1.0


def fn(x):
    return x * State.factor


opt = torch.compile(fn, backend="inductor")
x = torch.tensor([4.0])
State.factor = 1.0
opt(x)
State.factor = 10.0
eager = fn(x)
try:
    comp = opt(x)
except Exception as e:
    print("compiled raised", type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    sys.exit(1)
print("eager:", eager.tolist(), "compiled:", comp.tolist())
sys.exit(0 if torch.equal(eager, comp) else 1)
