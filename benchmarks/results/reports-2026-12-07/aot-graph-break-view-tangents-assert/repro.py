import torch

def fn(p1):
    v0 = p1 + 2
    v1 = v0.view(-1)
    torch._dynamo.graph_break()
    v1.add_(1)
    v0.add_(2)
    return (v0,)

args = (torch.nn.Parameter(torch.ones(1)),)
expected = fn(*args)
compiled_fn = torch.compile(fn)
actual = compiled_fn(*args)
