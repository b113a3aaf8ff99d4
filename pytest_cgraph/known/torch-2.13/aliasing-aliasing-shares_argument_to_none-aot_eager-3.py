# pytest-cgraph entry
# signature: aliasing-aliasing-shares_argument_to_none-aot_eager
# base signature: aliasing-aliasing-shares_argument_to_none
# layer: aot_eager
# failure: aliasing difference at iteration 1, aliasing of output #0
# first diverging layer: aot_eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: cudagraphs; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: set_onto_mutated_input.py; replay: python -m pytest_cgraph.record set_onto_mutated_input.py --backend cudagraphs
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# In-place mutation of input a0, then set_() of an intermediate onto a0; v is returned.
# Eager: v shares a0's storage (writing to v afterwards changes a0).
# Compiled: v is the functional "updated a0" value, a fresh tensor; a0 only gets a copy_ in the epilogue,
# so the output aliases nothing. First diverges at aot_eager. Variant of the known set_()-onto-inputs case.
import torch


def program(a0):
    v = a0 + 1
    a0.mul_(2)
    v.set_(a0)
    return (v,)


def inputs(k):
    return (torch.ones(1),)
'''[1:]

BACKEND = 'cudagraphs'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'aliasing-aliasing-shares_argument_to_none'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
