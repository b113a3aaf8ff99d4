"""pytorch/pytorch#185888: as_strided_ on a tensor created inside the compiled function leaves that tensor's sizes/strides stale.
Area: metadata-mutation. Backend: eager. Symptom: metadata.
In eager, as_strided_ changes the metadata of x and returns x itself; under Dynamo the returned
view gets the new (2, 2) layout while x keeps its old (4,) size and stride.
Written from the issue's description."""

import sys

import torch


def fn():
    x = torch.arange(4.0)
    y = x.as_strided_((2, 2), (2, 1))
    m = torch.max(y)
    return y, x.size(), x.stride(), m


BACKEND = "eager"
e = fn()
try:
    c = torch.compile(fn, backend=BACKEND, fullgraph=True)()
except Exception as ex:
    print("compiled raised", type(ex).__name__, str(ex).splitlines()[0])
    sys.exit(1)
print("eager   : y", tuple(e[0].shape), "x size", tuple(e[1]), "x stride", tuple(e[2]))
print("compiled: y", tuple(c[0].shape), "x size", tuple(c[1]), "x stride", tuple(c[2]))
ok = torch.equal(e[0], c[0]) and tuple(e[1]) == tuple(c[1]) and tuple(e[2]) == tuple(c[2])
sys.exit(0 if ok and e[3] == c[3] else 1)
