import copy
import torch

def fn(a0, a1):
    torch.ops.aten.set_(a0, a1)
    return (a0 + 1,)

eager_args = (torch.zeros(3), torch.arange(5.0))
compiled_args = copy.deepcopy(eager_args)
expected = fn(*eager_args)
compiled_fn = torch.compile(fn)
actual = compiled_fn(*compiled_args)
