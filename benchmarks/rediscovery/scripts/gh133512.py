"""pytorch/pytorch#133512: functionalization loses the strides of a mutated strided input, so a later as_strided_copy reads the wrong elements.
Area: input-mutation. Backend: aot_eager. Symptom: silent.
After add_ on a non-contiguous input, the functionalized value is a fresh contiguous tensor, and
the stride-sensitive as_strided_copy is then applied to those contiguous strides instead of the input's.
Written from the issue's description."""

import sys

import torch


def fn(x):
    x.add_(1)
    return torch.as_strided_copy(x, (3,), (2,))


def make():
    return torch.arange(10)[::2]


xe = make()
eager = fn(xe)
xc = make()
try:
    comp = torch.compile(fn, backend="aot_eager", fullgraph=True)(xc)
except Exception as e:
    print("compiled raised", type(e).__name__, str(e).splitlines()[0])
    sys.exit(1)
print("eager   :", eager.tolist(), "input", xe.tolist())
print("compiled:", comp.tolist(), "input", xc.tolist())
ok = torch.equal(eager, comp) and torch.equal(xe, xc)
sys.exit(0 if ok else 1)
