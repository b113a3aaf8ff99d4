# pytest-cgraph entry
# signature: grad-grad-aot_eager
# base signature: grad-grad
# layer: aot_eager
# failure: grad difference at iteration 1, grad of a0
# first diverging layer: aot_eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: aot_eager; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: grad-grad-aot_eager.py; replay: python -m pytest_cgraph.record grad-grad-aot_eager.py --backend aot_eager
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# A gradient hook registered on a view of a leaf inside the compiled region
# is dropped: eager doubles the leaf's gradient, compiled does not.
import torch


def program(a0):
    v0 = a0.t()
    v0.register_hook(lambda grad: grad * 2)
    return (v0,)


def inputs(k):
    return (torch.ones(1, requires_grad=True),)
'''[1:]

BACKEND = 'aot_eager'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'grad-grad'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
