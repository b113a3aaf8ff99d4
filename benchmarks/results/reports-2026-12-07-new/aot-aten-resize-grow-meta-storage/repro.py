import copy
import torch
torch.set_num_threads(2)

def fn(a0):
    torch.ops.aten.resize_(a0, [4]).fill_(2.0)
    v0 = a0.view(-1)
    return (v0,)

a0 = torch.ones((2,))
eager_args = (a0,)
compiled_args = copy.deepcopy(eager_args)
expected = fn(*eager_args)
compiled_fn = torch.compile(fn)
actual = compiled_fn(*compiled_args)
