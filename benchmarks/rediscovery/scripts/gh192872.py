"""pytorch/pytorch#192872: append to a locally built class's list attribute is lost across a graph break.
Area: graph-breaks. Backend: eager. Symptom: silent.
With enable_trace_load_build_class, a class created inside the compiled frame has no source; the
mutation of its class-level list made before a graph break is not carried into the resumed frame.
Written from the issue's description."""

import sys

import torch
import torch._dynamo

torch._dynamo.config.enable_trace_load_build_class = True


def fn(t):
    class Holder:
        items = []

    Holder.items.append(1)
    y = t * 2
    torch._dynamo.graph_break()
    Holder.items.append(2)
    return y.sum() + len(Holder.items)


t = torch.ones(3)
eager = fn(t.clone())
try:
    comp = torch.compile(fn, backend="eager")(t.clone())
except Exception as e:
    print("compiled raised", type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    sys.exit(1)
print("eager:", eager.item(), "compiled:", comp.item())
sys.exit(0 if torch.equal(eager, comp) else 1)
