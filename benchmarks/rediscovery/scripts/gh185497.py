"""pytorch/pytorch#185497: backward fails with "modified by an inplace operation" after interpolate then sub_/div_ of the input, only when compiled.
Area: input-mutation. Backend: inductor. Symptom: crash.
x is a view of a grad-requiring tensor; interpolate reads a slice of x, then x is mutated in place.
The Inductor graph saves a tensor whose version the later in-place writes bump (aot_eager passes).
Written from the issue's description."""

import sys

import torch
import torch.nn.functional as F


def fn(x, mean, std):
    y = F.interpolate(x[:, :8, :8].unsqueeze(0), size=(4, 4), mode="bilinear", align_corners=False)
    x.sub_(mean).div_(std)
    return y, x


def run(f):
    torch.manual_seed(0)
    base = torch.randn(1, 3, 16, 16, requires_grad=True)
    mean = torch.randn(3, 1, 1, requires_grad=True)
    std = torch.randn(3, 1, 1).abs().add(0.5).requires_grad_()
    y, z = f((base * 1.0).squeeze(0)[:, :16, :16], mean, std)
    (y.sum() + z.sum()).backward()
    return y.detach(), base.grad, mean.grad, std.grad


e = run(fn)
try:
    c = run(torch.compile(fn, backend="inductor"))
except Exception as ex:
    print("eager   : ok, base.grad sum", round(e[1].sum().item(), 4))
    print("compiled raised", type(ex).__name__, str(ex).splitlines()[0])
    sys.exit(1)
print("eager   : base.grad sum", e[1].sum().item())
print("compiled: base.grad sum", c[1].sum().item())
sys.exit(0 if all(torch.allclose(a, b) for a, b in zip(e, c)) else 1)
