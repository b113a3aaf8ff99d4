"""pytorch/pytorch#196173: control flow on `is` between mutable attributes reuses a stale graph.
Area: graph-breaks. Backend: eager. Symptom: silent.
Dynamo constant-folds `h.cur is h.left` with only type guards on the attributes, so after the
attribute is rebound the cached graph takes the old branch and replays the old attribute write.
Written from the issue's description."""

import sys

import torch


class Holder:
    def __init__(self):
        self.left, self.right = object(), object()
        self.cur = self.left


def fn(x, h):
    if h.cur is h.left:
        h.cur = h.right
        return x + 1
    h.cur = h.left
    return x - 1


def run(f):
    h, x = Holder(), torch.zeros(2)
    outs = [f(x, h).tolist() for _ in range(3)]
    return outs, ("left" if h.cur is h.left else "right")


eager = run(fn)
try:
    comp = run(torch.compile(fn, backend="eager"))
except Exception as e:
    print("compiled raised", type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    sys.exit(1)
print("eager   :", eager)
print("compiled:", comp)
sys.exit(0 if eager == comp else 1)
