"""pytorch/pytorch#179804: backward of a compiled region that disables an outer autocast uses the wrong precision.
Area: autograd-hooks. Backend: aot_eager. Symptom: silent.
Inside an outer bfloat16 autocast the compiled function runs its matmul in float32 under
autocast(enabled=False); eager's backward replays that fp32 matmul, but the compiled backward does not
match eager's weight gradient bit for bit.
Written from the issue's description."""

import sys

import torch

torch.manual_seed(0)
w = torch.nn.Linear(64, 64)


def fn(x):
    with torch.autocast("cpu", enabled=False):
        return x.float() @ w.weight.float().T


def run(f):
    torch.manual_seed(1)
    h = torch.randn(4, 64, dtype=torch.bfloat16, requires_grad=True)
    w.weight.grad = None
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = f(h)
    out.sum().backward()
    return w.weight.grad.clone(), h.grad


e = run(fn)
try:
    c = run(torch.compile(fn, backend="aot_eager"))
except Exception as ex:
    print("compiled raised", type(ex).__name__, str(ex).splitlines()[0])
    sys.exit(1)
print(
    "max |w.grad diff|:",
    (e[0] - c[0]).abs().max().item(),
    " max |h.grad diff|:",
    (e[1].float() - c[1].float()).abs().max().item(),
)
sys.exit(0 if torch.equal(e[0], c[0]) and torch.equal(e[1], c[1]) else 1)
