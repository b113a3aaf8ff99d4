"""pytorch/pytorch#190758: with activation_memory_budget below 1 the partitioner recomputes dropout in backward with fresh randomness.
Area: rng. Backend: inductor. Symptom: silent.
The memory-budget partitioner may choose to recompute RNG ops in the backward graph; the recomputed
dropout draws a new mask, so the gradient uses another mask than the forward output (fallback_random on).
Written from the issue's description."""

import sys

import torch
import torch._functorch.config
import torch._inductor.config

torch._inductor.config.fallback_random = True
torch._functorch.config.activation_memory_budget = 0.0


def fn(x):
    return torch.nn.functional.dropout(x.sin(), 0.5).cos()


def run(f):
    x = torch.linspace(0.1, 1.0, 64).requires_grad_()
    torch.manual_seed(0)
    out = f(x)
    out.sum().backward()
    return out.detach(), x.grad


e = run(fn)
try:
    c = run(torch.compile(fn, backend="inductor"))
except Exception as ex:
    print("compiled raised", type(ex).__name__, str(ex).splitlines()[0])
    sys.exit(1)
print("outputs equal:", torch.allclose(e[0], c[0]), " grads equal:", torch.allclose(e[1], c[1]))
print(
    "zero-grad positions eager:", (e[1] == 0).sum().item(), " compiled:", (c[1] == 0).sum().item()
)
sys.exit(0 if torch.allclose(e[0], c[0]) and torch.allclose(e[1], c[1]) else 1)
