"""pytorch/pytorch#197896: list appends made by a method of a class defined and built inside the compiled function are dropped.
Area: graph-breaks. Backend: eager. Symptom: silent.
The method closes over a list of the enclosing scope; Dynamo traces the append into a fresh
tracker for the cell and never replays it, so the caller's list stays empty.
Written from the issue's description."""

import sys

import torch


def make():
    log = []

    class Helper:
        def touch(self, t):
            log.append(t.shape[0])

    def fn(x):
        Helper().touch(x)
        return x + 1

    return fn, log


fe, loge = make()
fc, logc = make()
eager = fe(torch.ones(3))
try:
    opt = torch.compile(fc, backend="eager", fullgraph=True)
    comp = opt(torch.ones(3))
except Exception as e:
    print("compiled raised", type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    sys.exit(1)
print("eager log:", loge, "compiled log:", logc)
sys.exit(0 if loge == logc and torch.equal(eager, comp) else 1)
