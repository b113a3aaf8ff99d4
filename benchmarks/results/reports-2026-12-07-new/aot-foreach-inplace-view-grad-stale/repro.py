import copy
import torch

def fn(a0, w):
    v1 = a0 * w
    v3 = v1[:2]
    torch._foreach_mul_([v1], 2.0)
    return (v3,)

a0 = torch.ones(3)
w = torch.nn.Parameter(torch.full((1,), 0.5))
eager_args = (a0, w)
compiled_args = copy.deepcopy(eager_args)
expected = fn(*eager_args)
expected[0].sum().backward()
compiled_fn = torch.compile(fn)
actual = compiled_fn(*compiled_args)
actual[0].sum().backward()
print("eager:    w.grad:", eager_args[1].grad)
print("compiled: w.grad:", compiled_args[1].grad)
torch.testing.assert_close(compiled_args[1].grad, eager_args[1].grad, equal_nan=True)
