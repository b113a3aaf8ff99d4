"""pytorch/pytorch#115774: a module attribute tensor replaced between calls is not re-read by the compiled forward.
Area: graph-breaks. Backend: eager. Symptom: silent.
forward writes into self.cache and returns it; after the user assigns a fresh tensor to self.cache,
the compiled code keeps writing into the old tensor because nothing guards the attribute.
Written from the issue's description."""

import sys

import torch


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.cache = torch.tensor([0, 0])

    def forward(self, x, pos):
        self.cache[pos] = x
        return self.cache


def run(compiled):
    m = M()
    f = torch.compile(m, backend="eager") if compiled else m
    f(torch.tensor([2]), torch.tensor([0]))
    m.cache = torch.tensor([0, 0])
    return f(torch.tensor([1]), torch.tensor([1])).tolist()


eager = run(False)
try:
    comp = run(True)
except Exception as e:
    print("compiled raised", type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    sys.exit(1)
print("eager:", eager, "compiled:", comp)
sys.exit(0 if eager == comp else 1)
