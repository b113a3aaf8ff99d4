"""pytorch/pytorch#138112: a nonlocal written by one inlined function is read stale by another.
Area: graph-breaks. Backend: eager. Symptom: silent.
run_fn sets nonlocal z = 3 and then calls fn, which copies z into nonlocal k; under Dynamo fn read
the value z had before, so k ends up 1 instead of 3.
Written from the issue's description."""

import sys

import torch


def run(compile_it):
    z, k = 1, 2

    def create_fn():
        def fn(x):
            nonlocal k, z
            k = z

        return fn

    def run_fn(fn, x):
        nonlocal z
        z = 3
        fn(x)
        return x.cos()

    def foo(x):
        return run_fn(create_fn(), x)

    f = torch.compile(foo, backend="eager", fullgraph=True) if compile_it else foo
    f(torch.zeros(2))
    return z, k


eager = run(False)
try:
    comp = run(True)
except Exception as e:
    print("compiled raised", type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    sys.exit(1)
print("eager (z, k):", eager, "compiled (z, k):", comp)
sys.exit(0 if eager == comp else 1)
