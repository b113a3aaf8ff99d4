"""pytorch/pytorch#114338: enable_grad inside a function compiled and called under ambient no_grad is lost.
Area: autograd-hooks. Backend: aot_eager. Symptom: metadata.
AOTAutograd traced the graph as an inference graph because grad was off at the call, so the output of
the enable_grad region did not require grad where eager's does.
Written from the issue's description."""

import sys

import torch


def fn(x):
    with torch.enable_grad():
        out = x + 1
    return out


def run(f):
    with torch.no_grad():
        r = f(torch.zeros(10, requires_grad=True))
    return r.requires_grad


e = run(fn)
try:
    c = run(torch.compile(fn, backend="aot_eager"))
except Exception as ex:
    print("compiled raised", type(ex).__name__, str(ex).splitlines()[0])
    sys.exit(1)
print("eager requires_grad:", e, "compiled requires_grad:", c)
sys.exit(0 if e == c else 1)
