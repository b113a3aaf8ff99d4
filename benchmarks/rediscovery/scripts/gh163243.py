"""pytorch/pytorch#163243: backward of a complex cholesky over A @ A.mH fails to compile.
Area: views-aliasing. Backend: inductor. Symptom: crash.
The conjugate-transpose view .mH feeds a complex matmul; with decompositions the backward graph
reaches a view_as_real on a tensor whose last stride is not 1, and compilation raises.
Written from the issue's description."""

import sys

import torch


def fn(a):
    eye = torch.eye(4, dtype=a.dtype).expand(2, 4, 4).contiguous()
    m = eye + 0.5 * (a @ a.mH)
    r = torch.linalg.cholesky(m, upper=True)
    return r.abs().sum()


torch.manual_seed(0)
a0 = torch.randn(2, 4, 4, dtype=torch.complex64)
ae, ac = a0.clone().requires_grad_(), a0.clone().requires_grad_()
eager = fn(ae)
eager.backward()
try:
    comp = torch.compile(fn, backend="inductor")(ac)
    comp.backward()
except Exception as e:
    print("compiled raised", type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    sys.exit(1)
print("eager loss:", eager.item(), "compiled loss:", comp.item())
ok = torch.allclose(eager, comp, atol=1e-4) and torch.allclose(ae.grad, ac.grad, atol=1e-4)
print("match" if ok else "MISMATCH")
sys.exit(0 if ok else 1)
