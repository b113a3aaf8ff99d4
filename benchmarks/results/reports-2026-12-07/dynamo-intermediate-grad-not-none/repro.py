import copy
import torch

def fn(a0):
    v0 = a0 * 1
    v0 = v0 * (2 if v0.grad is None else 3)
    v0.sum().backward()
    with torch.no_grad():
        v1 = a0 * 2
    return (v1,)

a0 = torch.ones((1,))
a0.requires_grad_(True)
eager_args = (a0,)
compiled_args = copy.deepcopy(eager_args)
expected = fn(*eager_args)
compiled_fn = torch.compile(fn)
actual = compiled_fn(*compiled_args)
print("eager:    a0.grad:", eager_args[0].grad)
print("compiled: a0.grad:", compiled_args[0].grad)
torch.testing.assert_close(compiled_args[0].grad, eager_args[0].grad, equal_nan=True)
