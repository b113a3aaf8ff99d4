"""pytorch/pytorch#93259: returning the result of an input's unsqueeze_ fails to compile.
Area: views-aliasing. Backend: inductor. Symptom: crash.
unsqueeze_ is a metadata-only in-place view op on a graph input; the compiled function must change
the input's shape and return it, which once raised an AssertionError while lowering unsqueeze_.
Written from the issue's description."""

import sys

import torch


def fn(x):
    return x.unsqueeze_(0)


x = torch.rand(1)
xe, xc = x.clone(), x.clone()
eager = fn(xe)
try:
    comp = torch.compile(fn, backend="inductor")(xc)
except Exception as e:
    print("compiled raised", type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    sys.exit(1)
print(
    "eager:", tuple(eager.shape), tuple(xe.shape), "compiled:", tuple(comp.shape), tuple(xc.shape)
)
ok = torch.equal(eager, comp) and xe.shape == xc.shape and (comp is xc) == (eager is xe)
sys.exit(0 if ok else 1)
