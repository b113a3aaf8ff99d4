"""pytorch/pytorch#142853: with fallback_random on, nn.Dropout2d under inductor on CPU draws another mask than eager.
Area: rng. Backend: inductor. Symptom: silent.
fallback_random is meant to make inductor reproduce eager's random draws; for channel dropout
(Dropout1d/2d/3d) on CPU it had the opposite effect and the masks differed.
Written from the issue's description."""

import sys

import torch
import torch._inductor.config

torch._inductor.config.fallback_random = True
drop = torch.nn.Dropout2d(p=0.5)


def fn(x):
    torch.manual_seed(0)
    return drop(x)


torch.manual_seed(0)
x = torch.randn(1, 8, 16, 16)
e = fn(x.clone())
try:
    c = torch.compile(fn, backend="inductor")(x.clone())
except Exception as ex:
    print("compiled raised", type(ex).__name__, str(ex).splitlines()[0])
    sys.exit(1)
print(
    "eager kept channels:",
    (e.abs().sum((2, 3)) > 0).int().tolist(),
    "\ncompiled:",
    (c.abs().sum((2, 3)) > 0).int().tolist(),
)
sys.exit(0 if torch.allclose(e, c) else 1)
