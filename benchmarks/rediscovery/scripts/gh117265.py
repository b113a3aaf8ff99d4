"""pytorch/pytorch#117265: a module full_backward_pre_hook registered after the first compiled call is ignored.
Area: autograd-hooks. Backend: aot_eager. Symptom: silent.
Dynamo installs no guard on the module's backward hooks, so the graph compiled without the hook is
reused and the hook that doubles grad_output never runs; the input grad stays un-doubled.
Written from the issue's description."""

import sys

import torch


def run(compile_it):
    torch.manual_seed(0)
    layer = torch.nn.Linear(3, 3, bias=False)
    f = lambda x: layer(x)
    if compile_it:
        f = torch.compile(f, backend="aot_eager", fullgraph=True)
    f(torch.randn(3, requires_grad=True))
    layer.register_full_backward_pre_hook(lambda m, go: tuple(g * 2 for g in go))
    x = torch.randn(3, requires_grad=True)
    f(x).sum().backward()
    return x.grad


e = run(False)
try:
    c = run(True)
except Exception as ex:
    print("compiled raised", type(ex).__name__, str(ex).splitlines()[0])
    sys.exit(1)
print("eager x.grad:", e, "\ncompiled x.grad:", c)
sys.exit(0 if torch.allclose(e, c) else 1)
