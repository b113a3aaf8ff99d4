"""pytorch/pytorch#192985: torch.func.jvp over a custom autograd.Function inside torch.compile ignores its jvp.
Area: autograd-hooks. Backend: eager. Symptom: silent.
Under forward AD the dual inputs do not require grad, so Dynamo inlines the Function's forward as plain
ops and the default tangent of sin replaces the custom jvp (which returns zeros).
Written from the issue's description."""

import sys

import torch


class SinZeroJvp(torch.autograd.Function):
    @staticmethod
    def forward(x):
        return torch.sin(x)

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, grad):
        return torch.zeros_like(grad)

    @staticmethod
    def jvp(ctx, dx):
        return torch.zeros_like(dx)


fn = lambda x, dx: torch.func.jvp(SinZeroJvp.apply, (x,), (dx,))[1]
torch.manual_seed(0)
x, dx = torch.randn(4), torch.randn(4)
e = fn(x.clone(), dx.clone())
try:
    c = torch.compile(fn, backend="eager", fullgraph=True)(x.clone(), dx.clone())
except Exception as ex:
    print("compiled raised", type(ex).__name__, str(ex).splitlines()[0])
    sys.exit(1)
print("eager tangent:", e, "\ncompiled tangent:", c)
sys.exit(0 if torch.allclose(e, c) else 1)
