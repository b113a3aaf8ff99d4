import copy
import torch

def fn(a0):
    torch.ops.aten.resize_(a0, [2])
    return (a0 * 1,)

a0 = torch.arange(3.0)
eager_args = (a0,)
compiled_args = copy.deepcopy(eager_args)
for _ in range(2):
    expected = fn(*eager_args)
compiled_fn = torch.compile(fn, backend="aot_eager")
for _ in range(2):
    actual = compiled_fn(*compiled_args)
