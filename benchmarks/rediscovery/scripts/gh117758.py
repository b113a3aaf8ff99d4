"""pytorch/pytorch#117758: a forward hook registered on a submodule after the first compiled call never runs.
Area: autograd-hooks. Backend: eager. Symptom: silent.
With the default skip_nnmodule_hook_guards, Dynamo does not guard on module hook dicts, so the graph
traced without the hook is reused and the hook that doubles the output is skipped.
Written from the issue's description."""

import sys

import torch


def run(compile_it):
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU(), torch.nn.Linear(2, 2))
    f = torch.compile(m, backend="eager") if compile_it else m
    x = torch.ones(1, 2)
    f(x)
    m[2].register_forward_hook(lambda mod, inp, out: out * 2)
    return f(x).detach()


e = run(False)
try:
    c = run(True)
except Exception as ex:
    print("compiled raised", type(ex).__name__, str(ex).splitlines()[0])
    sys.exit(1)
print("eager output after hook:", e, "\ncompiled:", c)
sys.exit(0 if torch.allclose(e, c) else 1)
