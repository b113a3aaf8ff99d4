"""pytorch/pytorch#147255: nn.RReLU in training mode under inductor on CPU differs from eager with fallback_random.
Area: rng. Backend: inductor. Symptom: silent.
RReLU's functional decomposition drew its random slopes outside the random-op table, so
fallback_random did not route it to eager's kernel and the negative-side slopes differed.
Written from the issue's description."""

import sys

import torch
import torch._inductor.config

torch._inductor.config.fallback_random = True
m = torch.nn.RReLU()


def fn(x):
    return m(x)


torch.manual_seed(0)
x = torch.randn(1, 1, 16, 16)
torch.manual_seed(1)
e = fn(x)
torch.manual_seed(1)
try:
    c = torch.compile(fn, backend="inductor")(x)
except Exception as ex:
    print("compiled raised", type(ex).__name__, str(ex).splitlines()[0])
    sys.exit(1)
print("max |eager - compiled|:", (e - c).abs().max().item())
sys.exit(0 if torch.allclose(e, c) else 1)
