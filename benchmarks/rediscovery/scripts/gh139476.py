"""pytorch/pytorch#139476: flipping requires_grad of a submodule's parameters reuses the old compiled frame.
Area: graph-breaks. Backend: aot_eager. Symptom: silent.
A compiled module is called with layer2 frozen, then unfrozen; the guards do not see the
requires_grad change, so the cached graph gives layer2's weight no gradient.
Written from the issue's description."""

import sys

import torch


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l1, self.l2 = torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.l2(x + self.l1.bias)


def run(compiled):
    torch.manual_seed(0)
    m = M()
    f = torch.compile(m, backend="aot_eager") if compiled else m
    grads = []
    for freeze in (True, False):
        for p in m.l2.parameters():
            p.requires_grad_(not freeze)
        m.zero_grad(set_to_none=True)
        f(torch.ones(2, 4)).sum().backward()
        grads.append(None if m.l2.weight.grad is None else m.l2.weight.grad.sum().item())
    return grads


eager = run(False)
try:
    comp = run(True)
except Exception as e:
    print("compiled raised", type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    sys.exit(1)
print("eager l2.weight.grad sums:", eager, "compiled:", comp)
sys.exit(0 if eager == comp else 1)
