import copy
import torch

def fn(a0, a1):
    loss = (a0 * a1).sum()
    loss.backward()
    with torch.no_grad():
        a0 -= 0.1 * a0.grad
    a0.grad = None
    return (loss.detach(),)

a0 = torch.ones(3, requires_grad=True)
a1 = torch.arange(3.0)
eager_args = (a0, a1)
compiled_args = copy.deepcopy(eager_args)
expected = fn(*eager_args)
compiled_fn = torch.compile(fn)
actual = compiled_fn(*compiled_args)
print("eager:    a0.grad:", eager_args[0].grad)
print("compiled: a0.grad:", compiled_args[0].grad)
assert (compiled_args[0].grad is None) == (eager_args[0].grad is None), "grad of a0"
