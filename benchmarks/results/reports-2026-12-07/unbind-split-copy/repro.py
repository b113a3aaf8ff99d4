import copy
import torch

def fn(a0):
    with torch.no_grad():
        a0.mul_(0.9)
    v1 = a0.unbind(0)[0]
    return (a0, v1)

def relations(out, args):
    x = out[1]
    ptr = x.untyped_storage().data_ptr()
    return [
        "is" if o is x else "shares" if o.untyped_storage().data_ptr() == ptr else "-"
        for o in (args[0], out[0])
    ]

eager_args = (torch.ones(1, requires_grad=True),)
compiled_args = copy.deepcopy(eager_args)
expected = fn(*eager_args)
compiled_fn = torch.compile(fn)
actual = compiled_fn(*compiled_args)
print("eager:   ", relations(expected, eager_args))
print("compiled:", relations(actual, compiled_args))
assert relations(actual, compiled_args) == relations(expected, eager_args)
