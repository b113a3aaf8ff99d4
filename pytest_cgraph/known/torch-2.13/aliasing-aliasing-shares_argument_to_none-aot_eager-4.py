# pytest-cgraph entry
# signature: aliasing-aliasing-shares_argument_to_none-aot_eager
# base signature: aliasing-aliasing-shares_argument_to_none
# layer: aot_eager
# failure: aliasing difference at iteration 1, aliasing of output #0
# first diverging layer: aot_eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: aot_eager; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: nograd_mut_unbind.py; replay: python -m pytest_cgraph.record nograd_mut_unbind.py --backend aot_eager
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# In-place mul_ under no_grad on a requires_grad leaf input, then unbind(0)[0]: eager returns a view
# of a0's storage; compiled (aot_eager) returns a fresh copy (no storage sharing).
# eager shares_argument -> compiled none; first diverging layer aot_eager.
# Needs both: unbind without the mutation, or a0[0] instead of unbind, or requires_grad=False all alias correctly.
import torch


def program(a0):
    with torch.no_grad():
        a0.mul_(0.9)
    v0 = a0.unbind(0)[0]
    return (v0,)


def inputs(k):
    return (torch.ones(1, requires_grad=True),)
'''[1:]

BACKEND = 'aot_eager'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'aliasing-aliasing-shares_argument_to_none'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
