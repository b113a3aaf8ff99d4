import torch

def fn(a0):
    v0 = a0.index_add(0, torch.tensor([1]), torch.ones_like(a0[:1]))
    v0[v0 > 0] = -2.0
    return (v0,)

args = (torch.ones((2, 1)),)
expected = fn(*args)
compiled_fn = torch.compile(fn)
actual = compiled_fn(*args)
print("eager:   ", expected[0])
print("compiled:", actual[0])
torch.testing.assert_close(actual[0], expected[0], equal_nan=True)
