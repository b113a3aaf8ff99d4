"""pytorch/pytorch#191571: a size-1 scatter_add_ target that is gathered from in the same graph returns stale zeros.
Area: inplace. Backend: inductor. Symptom: silent.
On CUDA, Inductor fuses the in-place scatter_add_ and the index_select into one Triton kernel and
emits the gather's load before the atomic add; the CPU backend keeps the order.
Written from the issue's description."""

import sys

import torch


def fn(x, idx):
    res = torch.zeros(1, x.shape[1], dtype=x.dtype)
    res.scatter_add_(0, idx.unsqueeze(-1).expand(-1, x.shape[1]), x)
    return torch.index_select(res, 0, idx)


torch.manual_seed(0)
x = torch.randn(8, 4)
idx = torch.zeros(8, dtype=torch.long)
oe = fn(x, idx)
try:
    oc = torch.compile(fn, backend="inductor")(x, idx)
except Exception as e:
    print("compiled raised", type(e).__name__, str(e).splitlines()[0])
    sys.exit(1)
print("eager   : row0", [round(v, 4) for v in oe[0].tolist()])
print("compiled: row0", [round(v, 4) for v in oc[0].tolist()])
sys.exit(0 if torch.allclose(oe, oc) else 1)
