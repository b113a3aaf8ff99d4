import copy
import torch

@torch.library.custom_op('cgraph::add_one_', mutates_args=('x',))
def _cgraph_add_one_(x: torch.Tensor) -> None:
    x.add_(1)

@_cgraph_add_one_.register_fake
def _(x):
    return None

def fn(a0):
    v0 = a0[0] * 2
    torch.ops.cgraph.add_one_(a0)
    return (v0,)

a0 = torch.full((3,), 0.25)
eager_args = (a0,)
compiled_args = copy.deepcopy(eager_args)
expected = fn(*eager_args)
compiled_fn = torch.compile(fn)
actual = compiled_fn(*compiled_args)
print("eager:   ", expected[0])
print("compiled:", actual[0])
torch.testing.assert_close(actual[0], expected[0], equal_nan=True)
