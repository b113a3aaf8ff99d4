"""pytorch/pytorch#180837: assigning a complex tensor's .imag attribute fails to compile.
Area: views-aliasing. Backend: eager. Symptom: crash.
x.imag = t writes through the imaginary view of x; eager supports it, Dynamo refuses the tensor
attribute store ("Failed to set tensor attribute") instead of tracing or graph-breaking.
Written from the issue's description."""

import sys

import torch


def fn(x):
    z = torch.complex(x, torch.zeros_like(x))
    z.imag = torch.tensor([5.0, 6.0])
    return torch.view_as_real(z)


x = torch.tensor([1.0, 2.0])
eager = fn(x)
try:
    comp = torch.compile(fn, backend="eager")(x)
except Exception as e:
    print("eager ran:", eager.flatten().tolist())
    print("compiled raised", type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    sys.exit(1)
print("eager:", eager.flatten().tolist(), "compiled:", comp.flatten().tolist())
sys.exit(0 if torch.equal(eager, comp) else 1)
