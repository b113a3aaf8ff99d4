# pytest-cgraph entry
# signature: grad-grad-aot_eager
# base signature: grad-grad
# layer: aot_eager
# failure: grad difference at iteration 1, grad of p1
# first diverging layer: aot_eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: aot_eager; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: grad-grad-aot_eager-2.py; replay: python -m pytest_cgraph.record grad-grad-aot_eager-2.py --backend aot_eager
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# family: mutation · schedule: persistent · iterations: 5
import torch


def program(a0, p1):
    with torch.no_grad():
        p1.mul_(0.9)
    v0 = p1 * p1
    return (v0,)


def inputs(k):
    g = torch.Generator().manual_seed(1000)
    a0 = torch.randn((1,), generator=g)
    p1 = torch.randn((1,), generator=g)
    p1 = torch.nn.Parameter(p1)
    return (a0, p1,)


FRESH_INPUTS = False
ITERS = 5
'''[1:]

BACKEND = 'aot_eager'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'grad-grad'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
