"""Compiled autograd leaves its compile context open when a capture is refused.

Seen on torch 2.13.0 and 2.14.1, CPU.

The refused capture's context stays current while anything holds the failure;
when the collector closes it during a later compile, that compile fails with
"AssertionError: compile_context is not set". Exit status 1 while the bug is there.
"""

import gc

import torch
from torch._dynamo import compiled_autograd


def double_backward(a: torch.Tensor) -> torch.Tensor:
    torch.autograd.grad(a.sum(), a, create_graph=True)
    return a * 2


x = torch.ones(2, requires_grad=True)
with compiled_autograd._enable(torch.compile(backend="aot_eager")):
    try:
        torch.compile(double_backward, backend="aot_eager")(x).sum().backward()
    except RuntimeError as e:
        refusal = e  # kept, as a test runner keeps a failure to report it
        print("refused:", str(e).splitlines()[0])
print("compile context still current after the refusal:", torch._guards.CompileContext.try_get())

# The refused capture's context generator is closed when the collector reaches it,
# wherever that is; here, as the next compile starts.
torch._dynamo.callback_handler.register_start_callback(
    lambda *_: (globals().pop("refusal", None), gc.collect())
)
torch.compile(lambda t: t + 1, backend="eager")(torch.ones(2))
print("no crash")
