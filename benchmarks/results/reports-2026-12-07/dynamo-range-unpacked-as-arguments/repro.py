import torch

def fn(a0):
    return (a0.flip(*range(2)),)

args = (torch.arange(8.0).reshape(2, 2, 2),)
expected = fn(*args)
compiled_fn = torch.compile(fn)
actual = compiled_fn(*args)
print("eager:   ", expected[0])
print("compiled:", actual[0])
torch.testing.assert_close(actual[0], expected[0], equal_nan=True)
