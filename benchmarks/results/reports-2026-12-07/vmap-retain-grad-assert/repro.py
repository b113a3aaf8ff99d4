import torch

def fn(a0):
    v0 = a0.clone()
    v1 = a0 + 1
    v1.retain_grad()
    v1.mul_(2)
    return (v1, v0)

args = (torch.ones(1, requires_grad=True),)
expected = fn(*args)
compiled_fn = torch.compile(fn)
actual = compiled_fn(*args)
