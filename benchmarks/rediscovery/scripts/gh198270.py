"""pytorch/pytorch#198270: index_put_ then an in-place update reading other positions is fused wrong.
Area: inplace. Backend: inductor. Symptom: silent.
Inductor fuses the copy back into x of an index_put_ with the next statement's read of x at other
positions (x.flip(0)), so the read sees the new values where eager sees the written ones in order.
Written from the issue's description."""

import sys

import torch


def f(x):
    x.index_put_((torch.arange(x.size(0)),), x * 2.0)
    x.add_(x.flip(0))
    return x


torch.manual_seed(0)
x = torch.rand(4, 8)
expected = f(x.clone())
try:
    actual = torch.compile(f, backend="inductor")(x.clone())
except Exception as error:
    print("compiled raised", type(error).__name__, str(error).splitlines()[0])
    sys.exit(1)
wrong = int((actual != expected).sum())
print("elements that differ from eager:", wrong, "of", expected.numel())
sys.exit(1 if wrong else 0)
