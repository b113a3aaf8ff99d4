"""pytorch/pytorch#152425: writing one element of an expanded (stride-0) view of a 0-d slice differs after compile.
Area: inplace. Backend: inductor. Symptom: silent.
a = x.expand(n) has stride 0, so a[-1] = 3 writes the single shared element and every entry of a
reads 3 in eager; the statically compiled loop gives back the untouched value for the second slice.
Written from the issue's description."""

import sys

import torch


def expand(x, n):
    a = x.expand((n,))
    a[-1] = 3
    return a


def fn(n):
    numbers = torch.arange(2)
    return [expand(numbers[i], n) for i in range(len(numbers))]


oe = fn(2)
try:
    oc = torch.compile(fn, backend="inductor", dynamic=False)(2)
except Exception as e:
    print("compiled raised", type(e).__name__, str(e).splitlines()[0])
    sys.exit(1)
print("eager   :", [t.tolist() for t in oe])
print("compiled:", [t.tolist() for t in oc])
sys.exit(0 if all(torch.equal(a, b) for a, b in zip(oe, oc)) else 1)
