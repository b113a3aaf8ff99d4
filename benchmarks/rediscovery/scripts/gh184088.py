"""pytorch/pytorch#184088: backward through a compiled output that is an expand of an intermediate crashes.
Area: views-aliasing. Backend: aot_eager. Symptom: crash.
The output x.sum(0, keepdim=True).expand_as(x) has stride 0; the compiled backward wrote in place into
a gradient buffer with overlapping memory and raised "more than one element ... single memory location".
Written from the issue's description."""

import sys

import torch


def fn(x):
    return x.sum(dim=0, keepdim=True).expand_as(x)


torch.manual_seed(0)
x = torch.randn(4, 8)
xe, xc = x.clone().requires_grad_(), x.clone().requires_grad_()
fn(xe).sum().backward()
try:
    torch.compile(fn, backend="aot_eager")(xc).sum().backward()
except Exception as e:
    print("compiled raised", type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    sys.exit(1)
print("eager grad sum:", xe.grad.sum().item(), "compiled grad sum:", xc.grad.sum().item())
sys.exit(0 if torch.allclose(xe.grad, xc.grad) else 1)
