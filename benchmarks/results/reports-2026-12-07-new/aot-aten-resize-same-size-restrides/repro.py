import torch

def fn(a2):
    torch.ops.aten.resize_(a2, [3])
    return (a2,)

def inputs():
    a2 = torch.arange(6.0)[::2]
    return (a2,)

eager_args = inputs()
compiled_args = inputs()
expected = fn(*eager_args)
compiled_fn = torch.compile(fn)
actual = compiled_fn(*compiled_args)
print("eager:   ", expected[0])
print("compiled:", actual[0])
torch.testing.assert_close(actual[0], expected[0], equal_nan=True)
