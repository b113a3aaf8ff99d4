"""pytorch/pytorch#91469: double backward through a compiled function is wrong or refused.
Area: autograd-hooks. Backend: aot_eager. Symptom: crash.
AOTAutograd's backward is a once-differentiable opaque node, so a second-order gradient of a compiled
function (create_graph=True, then grad again) was silently wrong and is now refused where eager computes it.
Written from the issue's description."""

import sys

import torch


def fn(x):
    return x * x * x * x * x


def run(f):
    x = torch.tensor(1.5, requires_grad=True)
    (gx,) = torch.autograd.grad(f(x), x, create_graph=True)
    (ggx,) = torch.autograd.grad(gx, x)
    return gx.detach(), ggx


e = run(fn)
try:
    c = run(torch.compile(fn, backend="aot_eager"))
except Exception as ex:
    print("eager (gx, ggx):", e)
    print("compiled raised", type(ex).__name__, str(ex).splitlines()[0])
    sys.exit(1)
print("eager (gx, ggx):", e, "\ncompiled:", c)
sys.exit(0 if all(torch.allclose(a, b) for a, b in zip(e, c)) else 1)
