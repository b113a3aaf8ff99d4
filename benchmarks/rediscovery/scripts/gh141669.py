"""pytorch/pytorch#141669: an in-place op on a leaf inside a custom Function forward fails to compile.
Area: autograd-hooks. Backend: eager. Symptom: crash.
Eager runs autograd.Function.forward with grad disabled, so exp_ on the leaf input is allowed; Dynamo
traces the forward with grad enabled and rejects the in-place op on a leaf that requires grad.
Written from the issue's description."""

import sys

import torch


class F(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        return torch.exp_(a)

    @staticmethod
    def backward(ctx, g):
        return g


def run(f):
    torch.manual_seed(0)
    a = torch.rand(3).requires_grad_()
    out = f(a)
    out.backward(torch.ones_like(out))
    return out.detach(), a.grad


e = run(F.apply)
try:
    c = run(torch.compile(F.apply, backend="eager"))
except Exception as ex:
    print("eager (out, a.grad):", e)
    print("compiled raised", type(ex).__name__, " | ".join(str(ex).splitlines()[:2]))
    sys.exit(1)
print("eager (out, a.grad):", e, "\ncompiled:", c)
sys.exit(0 if all(torch.allclose(x, y) for x, y in zip(e, c)) else 1)
