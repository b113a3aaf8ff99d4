"""pytorch/pytorch#100348: returning loss and loss.detach() gives one shared, detached tensor.
Area: views-aliasing. Backend: inductor. Symptom: crash.
The compiled graph returned the same tensor object for an output and its detach(), so the
differentiable output lost its grad_fn and backward raised.
Written from the issue's description."""

import sys

import torch


def fn(x):
    loss = x.mean()
    return loss, loss.detach()


x = torch.randn(4, 4, generator=torch.Generator().manual_seed(0), requires_grad=True)
le, de = fn(x)
le.backward()
ge = x.grad.clone()
x.grad = None
try:
    lc, dc = torch.compile(fn, backend="inductor")(x)
    same = lc is dc
    lc.backward()
except Exception as e:
    print("compiled raised", type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    sys.exit(1)
print("eager: same object", le is de, "compiled: same object", same)
ok = (not same) and torch.allclose(ge, x.grad) and lc.requires_grad and not dc.requires_grad
sys.exit(0 if ok else 1)
