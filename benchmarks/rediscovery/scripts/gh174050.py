"""pytorch/pytorch#174050: assigning obj.__class__ inside a compiled function is not modelled.
Area: graph-breaks. Backend: eager. Symptom: silent.
An object built in the frame has its __class__ rebound to a subclass; Dynamo keeps tracking the old
class, so isinstance() against the new class folds to False.
Written from the issue's description."""

import sys

import torch


class Base:
    def __init__(self, v):
        self.v = v


class Derived(Base):
    pass


def fn(x):
    obj = Base(5)
    obj.__class__ = Derived
    return x + 1, isinstance(obj, Derived), type(obj) is Derived


eager = fn(torch.ones(1))
try:
    comp = torch.compile(fn, backend="eager")(torch.ones(1))
except Exception as e:
    print("compiled raised", type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    sys.exit(1)
print("eager   :", eager[1:], "compiled:", comp[1:])
sys.exit(0 if eager[1:] == comp[1:] and torch.equal(eager[0], comp[0]) else 1)
