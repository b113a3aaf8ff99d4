import copy
import torch

def fn(a0):
    with torch.no_grad():
        a0 -= 1
    a0.grad = None
    return (a0 * 2,)

a0 = torch.ones(3, requires_grad=True)
a0.grad = torch.ones(3)
eager_args = (a0,)
compiled_args = copy.deepcopy(eager_args)
expected = fn(*eager_args)
expected[0].sum().backward()
compiled_fn = torch.compile(fn)
actual = compiled_fn(*compiled_args)
actual[0].sum().backward()
print("eager:    a0.grad:", eager_args[0].grad)
print("compiled: a0.grad:", compiled_args[0].grad)
torch.testing.assert_close(compiled_args[0].grad, eager_args[0].grad, equal_nan=True)
