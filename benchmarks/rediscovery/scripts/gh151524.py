"""pytorch/pytorch#151524: two torch.rand calls in a compiled function return another value than eager with fallback_random.
Area: rng. Backend: inductor. Symptom: silent.
The first draw is dead code; inductor drops it, so the surviving rand consumes the generator's first
value instead of its second, although fallback_random promises eager's draws.
Written from the issue's description."""

import sys

import torch
import torch._inductor.config

torch._inductor.config.fallback_random = True


def fn():
    x = torch.rand(1)
    x = torch.rand(1)
    return x


torch.manual_seed(0)
e = fn()
torch.manual_seed(0)
try:
    c = torch.compile(fn, backend="inductor")()
except Exception as ex:
    print("compiled raised", type(ex).__name__, str(ex).splitlines()[0])
    sys.exit(1)
print("eager:", e, "compiled:", c)
sys.exit(0 if torch.equal(e, c) else 1)
