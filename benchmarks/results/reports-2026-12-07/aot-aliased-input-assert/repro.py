import torch

def fn(a0, b1):
    with torch.no_grad():
        a0.mul_(0.9)
    return (a0, b1 * 1, a0)

def inputs():
    a0 = torch.ones(3, requires_grad=True)
    return (a0, a0.view(3))

eager_args = inputs()
compiled_args = inputs()
expected = fn(*eager_args)
compiled_fn = torch.compile(fn)
actual = compiled_fn(*compiled_args)
