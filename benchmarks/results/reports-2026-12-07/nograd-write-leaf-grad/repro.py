import copy
import torch

def fn(p1):
    with torch.no_grad():
        p1.mul_(0.9)
    v0 = p1 * p1
    return (v0,)

p1 = torch.ones((1,))
p1 = torch.nn.Parameter(p1)
eager_args = (p1,)
compiled_args = copy.deepcopy(eager_args)
expected = fn(*eager_args)
expected[0].sum().backward()
compiled_fn = torch.compile(fn)
actual = compiled_fn(*compiled_args)
actual[0].sum().backward()
print("eager:    p1.grad:", eager_args[0].grad)
print("compiled: p1.grad:", compiled_args[0].grad)
torch.testing.assert_close(compiled_args[0].grad, eager_args[0].grad, equal_nan=True)
