"""pytorch/pytorch#172956: a custom Function whose backward mutates a tensor saved for backward and returned by forward.
Area: autograd-hooks. Backend: aot_eager. Symptom: crash.
offsets is created in forward, saved, returned, and written in place by backward; the partitioner puts
that write into the backward graph although the tensor is a forward output, and compiling fails.
Written from the issue's description."""

import sys

import torch


class F(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, offsets):
        ctx.save_for_backward(offsets)
        return x * 2

    @staticmethod
    def backward(ctx, g):
        (offsets,) = ctx.saved_tensors
        offsets.add_(g)
        return g.clone(), None


def fn(x):
    offsets = x.clone()
    return F.apply(x, offsets).clone(), offsets


def run(f):
    torch.manual_seed(0)
    x = torch.randn(8, requires_grad=True)
    out, offsets = f(x)
    out.sum().backward()
    return out.detach(), offsets.detach(), x.grad


e = run(fn)
try:
    c = run(torch.compile(fn, backend="aot_eager", fullgraph=True))
except Exception as ex:
    print("compiled raised", type(ex).__name__, " | ".join(str(ex).splitlines()[:2]))
    sys.exit(1)
print("eager (out, offsets, x.grad):", e, "\ncompiled:", c)
sys.exit(0 if all(torch.allclose(a, b) for a, b in zip(e, c)) else 1)
