"""pytorch/pytorch#165385: an invalid setattr that eager catches fails when Dynamo replays it.
Area: graph-breaks. Backend: eager. Symptom: crash.
Eager raises AttributeError on obj.__weakref__ = None and the except clause swallows it; Dynamo
records the store as a side effect without checking it, and the replayed STORE_ATTR raises.
Written from the issue's description."""

import sys

import torch


class Custom:
    pass


def fn(x, obj):
    try:
        obj.__weakref__ = None
    except AttributeError:
        pass
    return x + 1


eager = fn(torch.ones(3), Custom())
try:
    comp = torch.compile(fn, backend="eager")(torch.ones(3), Custom())
except Exception as e:
    print("eager ran:", eager.tolist())
    print("compiled raised", type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    sys.exit(1)
print("eager:", eager.tolist(), "compiled:", comp.tolist())
sys.exit(0 if torch.equal(eager, comp) else 1)
