import torch

def fn(a0):
    v0 = a0.t()
    a0.requires_grad_()
    with torch.no_grad():
        a0.mul_(0.9)
    return (v0,)

def inputs():
    return (torch.ones(1, 1).t(),)

eager_args = inputs()
compiled_args = inputs()
for _ in range(2):
    expected = fn(*eager_args)
    roots = [o.sum() for o in (expected[0],) if o.requires_grad]
    if roots:
        sum(roots).backward()
compiled_fn = torch.compile(fn)
for _ in range(2):
    actual = compiled_fn(*compiled_args)
    roots = [o.sum() for o in (actual[0],) if o.requires_grad]
    if roots:
        sum(roots).backward()
print("eager:    a0.grad:", eager_args[0].grad)
print("compiled: a0.grad:", compiled_args[0].grad)
assert (compiled_args[0].grad is None) == (eager_args[0].grad is None), "grad of a0"
