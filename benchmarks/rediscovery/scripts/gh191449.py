"""pytorch/pytorch#191449: resize_ on a view of an intermediate changes the base's result under Inductor.
Area: views-aliasing. Backend: inductor. Symptom: silent.
alias = base.view(-1); alias.resize_(12) must leave `base` at its one element; after the graph break on
resize_, Inductor's resumed graph returns a 12-element tensor instead.
Written from the issue's description."""

import sys

import torch


def fn(x):
    base = x + 1
    alias = base.view(-1)
    alias.resize_(12)
    return base + 1


x = torch.zeros(1)
eager = fn(x.clone())
try:
    comp = torch.compile(fn, backend="inductor")(x.clone())
except Exception as e:
    print("compiled raised", type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    sys.exit(1)
print("eager   :", tuple(eager.shape), eager.tolist())
print("compiled:", tuple(comp.shape), comp.tolist()[:4])
sys.exit(0 if eager.shape == comp.shape and torch.equal(eager, comp) else 1)
