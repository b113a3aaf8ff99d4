"""pytorch/pytorch#182765: gradient of diagonal_scatter's base comes out all zeros under Inductor.
Area: views-aliasing. Backend: inductor. Symptom: silent.
The backward of diagonal_scatter writes zeros into the diagonal view of the incoming gradient;
Inductor lowered that write with a zero-stride layout and zeroed the whole gradient.
Written from the issue's description."""

import sys

import torch


def fn(x, src):
    return torch.diagonal_scatter(x, src, 0).sum()


torch.manual_seed(0)
x, src = torch.randn(8, 8), torch.randn(8)
grads = []
for f in (fn, torch.compile(fn, backend="inductor")):
    a, b = x.clone().requires_grad_(), src.clone().requires_grad_()
    try:
        f(a, b).backward()
    except Exception as e:
        print("compiled raised", type(e).__name__, str(e).splitlines()[0] if str(e) else "")
        sys.exit(1)
    grads.append((a.grad, b.grad))
(ge, se), (gc, sc) = grads
print("eager x.grad sum:", ge.sum().item(), "compiled x.grad sum:", gc.sum().item())
sys.exit(0 if torch.equal(ge, gc) and torch.equal(se, sc) else 1)
