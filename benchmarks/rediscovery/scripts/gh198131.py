"""pytorch/pytorch#198131: `dst[:] = src[:]` followed by `src.add_(1)` copies the already-incremented src under Inductor.
Area: input-mutation. Backend: inductor. Symptom: silent.
A no-op-removal pass replaces the copy of input src by src itself, and the in-place add on src
is scheduled before the write into dst reads it, so dst receives the post-mutation values.
Written from the issue's description."""

import sys

import torch


def fn(dst, src):
    dst[0:, :] = src[0:, :]
    src.add_(1)
    return src


def make():
    return torch.zeros(3, 4), torch.arange(12.0).view(3, 4)


de, se = make()
fn(de, se)
dc, sc = make()
try:
    torch.compile(fn, backend="inductor")(dc, sc)
except Exception as e:
    print("compiled raised", type(e).__name__, str(e).splitlines()[0])
    sys.exit(1)
print("eager   : dst[0]", de[0].tolist(), "src[0]", se[0].tolist())
print("compiled: dst[0]", dc[0].tolist(), "src[0]", sc[0].tolist())
sys.exit(0 if torch.equal(de, dc) and torch.equal(se, sc) else 1)
