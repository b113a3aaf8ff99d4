import torch

def fn(a0):
    v0 = a0.sin()
    v1 = v0 * (2 if v0.grad is None else 3)
    return (v1,)

a0 = torch.ones((2,))
a0.requires_grad_(True)
args = (a0,)
expected = fn(*args)
compiled_fn = torch.compile(fn)
actual = compiled_fn(*args)
print("eager:   ", expected[0])
print("compiled:", actual[0])
torch.testing.assert_close(actual[0], expected[0], equal_nan=True)
