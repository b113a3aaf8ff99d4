import copy
import torch

def fn(a0):
    v0 = a0.clone()
    v1 = a0 + 0.5
    v2 = v1 + 2
    a0.detach_()
    v2.retain_grad()
    v2.sum().backward(retain_graph=True)
    v3 = v2.grad
    v4 = torch.vmap(lambda t: t.mul_(2))(v2)
    return (v4, v4, v0)

g = torch.Generator().manual_seed(1000)
a0 = torch.randn((1,), generator=g)
a0.requires_grad_(True)
eager_args = (a0,)
compiled_args = copy.deepcopy(eager_args)
expected = fn(*eager_args)
compiled_fn = torch.compile(fn)
actual = compiled_fn(*compiled_args)
