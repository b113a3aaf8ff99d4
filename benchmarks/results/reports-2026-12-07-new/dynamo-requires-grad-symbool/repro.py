import copy
import torch

def fn(m0, n0):
    m0.requires_grad_(n0 >= 1)
    return (m0(torch.ones(1, 4)).sum(),)

def inputs(k):
    torch.manual_seed(0)
    return (torch.nn.Linear(4, 2), k - 1)

for k in range(1, 3):
    eager_args = inputs(k)
    expected = fn(*eager_args)
compiled_fn = torch.compile(fn)
for k in range(1, 3):
    compiled_args = inputs(k)
    actual = compiled_fn(*compiled_args)
