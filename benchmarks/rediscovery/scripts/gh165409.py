"""pytorch/pytorch#165409: abs_ on an overlapping unfold view of an intermediate fails to compile.
Area: views-aliasing. Backend: aot_eager. Symptom: crash.
t1.unfold(1, 3, 2) overlaps itself; eager runs the in-place abs_, functionalization refuses to
mutate a tensor with internal overlap and compilation raises.
Written from the issue's description."""

import sys

import torch


def fn(x):
    t1 = torch.add(x, x)
    t2 = t1.unfold(1, 3, 2)
    return t2.abs_()


x = torch.tensor([[-1.0, 2.0, -3.0, 4.0, -5.0]])
eager = fn(x.clone())
try:
    comp = torch.compile(fn, backend="aot_eager")(x.clone())
except Exception as e:
    print("eager ran:", eager.tolist())
    print("compiled raised", type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    sys.exit(1)
print("eager:", eager.tolist(), "compiled:", comp.tolist())
sys.exit(0 if torch.equal(eager, comp) else 1)
