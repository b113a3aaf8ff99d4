"""pytorch/pytorch#193279: torch.func.grad over a custom autograd.Function inside torch.compile ignores its backward.
Area: autograd-hooks. Backend: eager. Symptom: silent.
Dynamo inlines the Function's forward as plain ops under the functorch grad transform, so the default
derivative of sin is used instead of the custom backward (which returns zeros).
Written from the issue's description."""

import sys

import torch


class SinZeroGrad(torch.autograd.Function):
    @staticmethod
    def forward(x):
        return torch.sin(x)

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, grad):
        return torch.zeros_like(grad)


fn = torch.func.grad(lambda x: SinZeroGrad.apply(x).sum())
torch.manual_seed(0)
x = torch.randn(4)
e = fn(x.clone())
try:
    c = torch.compile(fn, backend="eager", fullgraph=True)(x.clone())
except Exception as ex:
    print("compiled raised", type(ex).__name__, str(ex).splitlines()[0])
    sys.exit(1)
print("eager grad:", e, "\ncompiled grad:", c)
sys.exit(0 if torch.allclose(e, c) else 1)
