"""pytorch/pytorch#153389: two mutable custom ops on views of one base tensor give other values once compiled.
Area: input-mutation. Backend: inductor. Symptom: silent.
x1, x2 are rows of one tensor, mutated by a custom op, then read (row 0 of each) by a second op that
writes `out`; the functionalized graph copies a pre-mutation clone back into the input.
Written from the issue's description."""

import sys

import torch


@torch.library.custom_op("gh153389::foo_inplace", mutates_args={"x1", "x2"})
def foo_inplace(x1: torch.Tensor, x2: torch.Tensor) -> None:
    x1.add_(1)
    x2.add_(2)


@torch.library.custom_op("gh153389::bar_out", mutates_args={"out"})
def bar_out(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> None:
    out.copy_(a + b + 2)


def fn(x1, x2, out):
    foo_inplace(x1, x2)
    bar_out(x1[0], x2[0], out)
    return out


def run(f):
    torch.manual_seed(0)
    x = torch.randn(3, 3)
    out = torch.zeros_like(x)
    f(x[0], x[1], out)
    return x, out


xe, oe = run(fn)
try:
    xc, oc = run(torch.compile(fn, backend="inductor", fullgraph=True))
except Exception as e:
    print("compiled raised", type(e).__name__, str(e).splitlines()[0])
    sys.exit(1)
print("eager   : x[:2]", xe[:2].flatten().tolist()[:4], "out[0]", oe[0].tolist())
print("compiled: x[:2]", xc[:2].flatten().tolist()[:4], "out[0]", oc[0].tolist())
sys.exit(0 if torch.allclose(xe, xc) and torch.allclose(oe, oc) else 1)
