"""pytorch/pytorch#169253: appends to a class-level list inside a compiled forward are dropped.
Area: graph-breaks. Backend: eager. Symptom: silent.
A list stored as a class attribute and reached through the class name is mutated in the compiled
region; Dynamo does not replay the append as a side effect after the graph runs.
Written from the issue's description."""

import sys

import torch


class Model(torch.nn.Module):
    items = []

    def forward(self, x):
        Model.items.append(x)
        return None


def run(compiled):
    Model.items.clear()
    m = Model()
    if compiled:
        m.forward = torch.compile(m.forward, backend="eager")
    m(torch.ones(2))
    m(torch.ones(2))
    return len(Model.items)


eager = run(False)
try:
    comp = run(True)
except Exception as e:
    print("compiled raised", type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    sys.exit(1)
print("eager items:", eager, "compiled items:", comp)
sys.exit(0 if eager == comp else 1)
