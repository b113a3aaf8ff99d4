"""pytorch/pytorch#175855: a generator that appends to the list it iterates misses the new items.
Area: graph-breaks. Backend: eager. Symptom: silent.
Python's list iterator sees elements appended during iteration; Dynamo's list iterator was built from
a snapshot of the list, so the compiled result sums fewer terms.
Written from the issue's description."""

import sys

import torch


def fn(x):
    vals = [x.sum()]

    def grow_and_read():
        for item in vals:
            if len(vals) < 3:
                vals.append(item + 1)
            yield item

    return torch.stack(list(grow_and_read())).sum()


x = torch.ones(1)
eager = fn(x)
try:
    comp = torch.compile(fn, backend="eager")(x)
except Exception as e:
    print("compiled raised", type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    sys.exit(1)
print("eager:", eager.item(), "compiled:", comp.item())
sys.exit(0 if torch.equal(eager, comp) else 1)
