# pytest-cgraph entry
# signature: grad-grad-presence-aot_eager
# base signature: grad-grad-presence
# layer: aot_eager
# failure: grad difference at iteration 1, grad of p1
# first diverging layer: aot_eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: inductor; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: grad-grad-presence-aot_eager.py; replay: python -m pytest_cgraph.record grad-grad-presence-aot_eager.py --backend inductor
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# family: autograd · schedule: persistent · iterations: 5
import torch


def program(a0, p1, a2):
    v0 = p1 * 1
    v0.register_hook(lambda grad: grad * 2)
    a0.sum().backward(retain_graph=True)
    v0.add_(2)
    a2.add_(v0)
    with torch.no_grad():
        v1 = p1 * 2
    return (v1, a0,)


def inputs(k):
    g = torch.Generator().manual_seed(1000)
    a0 = torch.randn((1,), generator=g)
    a0.requires_grad_(True)
    p1 = torch.randn((1,), generator=g)
    p1 = torch.nn.Parameter(p1)
    a2 = torch.randn((2, 3, 3), generator=g)
    return (a0, p1, a2,)


FRESH_INPUTS = False
ITERS = 5
'''[1:]

BACKEND = 'inductor'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'grad-grad-presence'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
