"""pytorch/pytorch#118739: backward through each output of a compiled unbind separately fails the second time.
Area: views-aliasing. Backend: aot_eager. Symptom: crash.
All unbind outputs are views of the input produced by one CompiledFunction node; the first backward
frees that node's graph, so the second output's backward raises "backward through the graph a second time".
Written from the issue's description."""

import sys

import torch


def fn(x):
    return x.unbind(0)


def run(f):
    x = torch.arange(6.0).reshape(2, 3).requires_grad_()
    for out in f(x):
        out.sum().backward()
    return x.grad


eager = run(fn)
try:
    comp = run(torch.compile(fn, backend="aot_eager"))
except Exception as e:
    print("eager grad:", eager.tolist())
    print("compiled raised", type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    sys.exit(1)
print("eager grad:", eager.tolist(), "compiled grad:", comp.tolist())
sys.exit(0 if torch.equal(eager, comp) else 1)
