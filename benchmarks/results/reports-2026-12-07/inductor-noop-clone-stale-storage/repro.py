import copy
import torch

def fn(a0):
    a0[0] = 2.0
    return (a0.clone(),)

def relation(x, y):
    shared = x.untyped_storage().data_ptr() == y.untyped_storage().data_ptr()
    return "is" if x is y else "shares" if shared else "-"

eager_args = (torch.ones(3),)
compiled_args = copy.deepcopy(eager_args)
expected = fn(*eager_args)
compiled_fn = torch.compile(fn)
actual = compiled_fn(*compiled_args)
print("eager:   ", relation(expected[0], eager_args[0]))
print("compiled:", relation(actual[0], compiled_args[0]))
assert relation(actual[0], compiled_args[0]) == relation(expected[0], eager_args[0])
