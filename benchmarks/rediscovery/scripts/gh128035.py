"""pytorch/pytorch#128035: mutating a grad-requiring non-leaf input after detaching it loses the gradient to the leaf.
Area: input-mutation. Backend: aot_eager. Symptom: silent.
The input is inp * 2; the compiled function takes a detach() alias and then mul_'s the input, and
the replayed input mutation must keep the autograd history back to inp (eager grad is 4 per element).
Written from the issue's description."""

import sys

import torch


def fn(a):
    tmp = a.detach()
    a.mul_(2)
    return a, tmp


def run(f):
    inp = torch.ones(3, requires_grad=True)
    out = f(inp.mul(2))
    out[0].sum().backward()
    return out[0].detach(), inp.grad


oe, ge = run(fn)
try:
    oc, gc = run(torch.compile(fn, backend="aot_eager"))
except Exception as e:
    print("compiled raised", type(e).__name__, str(e).splitlines()[0])
    sys.exit(1)
print("eager   : out", oe.tolist(), "grad", None if ge is None else ge.tolist())
print("compiled: out", oc.tolist(), "grad", None if gc is None else gc.tolist())
ok = torch.equal(oe, oc) and gc is not None and torch.equal(ge, gc)
sys.exit(0 if ok else 1)
