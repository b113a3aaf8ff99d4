import copy
import torch

def fn(a0, b1):
    v0 = a0.clone()
    torch.ops.aten.unsqueeze_(v0, 1)
    b1[:, :v0.shape[1]] = v0
    return (b1,)

eager_args = (torch.ones(2, 4), torch.zeros(2, 3, 4))
compiled_args = copy.deepcopy(eager_args)
expected = fn(*eager_args)
compiled_fn = torch.compile(fn)
actual = compiled_fn(*compiled_args)
print("eager:   ", expected[0])
print("compiled:", actual[0])
torch.testing.assert_close(actual[0], expected[0], equal_nan=True)
