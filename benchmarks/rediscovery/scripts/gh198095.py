"""pytorch/pytorch#198095: a view of an aliased input with a storage offset is regenerated from the wrong base.
Area: views-aliasing. Backend: aot_eager. Symptom: silent.
With ta = t0[1:] passed next to t0 and t0 mutated, AOTAutograd merges both into a synthetic base and
replays the output view ta[0] on that base without ta's offset, returning t0[0] instead of t0[1].
Written from the issue's description."""

import sys

import torch


def fn(t0, ta):
    t0.add_(100)
    return ta[0]


base = torch.arange(24, dtype=torch.float64).reshape(4, 6)
e0, c0 = base.clone(), base.clone()
eager = fn(e0, e0[1:])
try:
    comp = torch.compile(fn, backend="aot_eager")(c0, c0[1:])
except Exception as e:
    print("compiled raised", type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    sys.exit(1)
print("eager   :", eager.tolist())
print("compiled:", comp.tolist())
sys.exit(0 if torch.equal(eager, comp) and torch.equal(e0, c0) else 1)
