import torch
torch.set_num_threads(1)

def fn(a0):
    a0.index_put_((torch.tensor([0, 0]),), torch.tensor(1.0, dtype=a0.dtype), accumulate=False)
    v0 = a0.clone()
    return (v0,)

def inputs():
    g = torch.Generator().manual_seed(1000)
    a0 = torch.randn((1,), generator=g).expand(1)
    return (a0,)

def relations(out, args):
    x = out[0]
    ptr = x.untyped_storage().data_ptr()
    return [
        "is" if o is x else "shares" if o.untyped_storage().data_ptr() == ptr else "-"
        for o in (args[0],)
    ]

eager_args = inputs()
compiled_args = inputs()
expected = fn(*eager_args)
compiled_fn = torch.compile(fn)
actual = compiled_fn(*compiled_args)
print("eager:   ", relations(expected, eager_args))
print("compiled:", relations(actual, compiled_args))
assert relations(actual, compiled_args) == relations(expected, eager_args)
