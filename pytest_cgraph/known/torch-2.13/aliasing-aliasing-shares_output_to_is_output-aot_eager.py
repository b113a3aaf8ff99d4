# pytest-cgraph entry
# signature: aliasing-aliasing-shares_output_to_is_output-aot_eager
# base signature: aliasing-aliasing-shares_output_to_is_output
# layer: aot_eager
# failure: aliasing difference at iteration 1, aliasing of output #1
# first diverging layer: aot_eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: cudagraphs; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: set_between_intermediates.py; replay: python -m pytest_cgraph.record set_between_intermediates.py --backend cudagraphs
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# set_() of one intermediate (an empty handle v1) onto another intermediate v0; both returned.
# Eager: v1 and v0 are two distinct tensor objects sharing one storage.
# Compiled: both outputs are the SAME object (out0 is out1), so e.g. out0.unsqueeze_(0) also reshapes out1.
# No graph input is involved. First diverges at aot_eager. Related: pytorch/pytorch#114338 (AOTAutograd returns one object for two outputs).
import torch


def program(a0):
    v0 = a0 + 2
    v1 = torch.empty(0)
    v1.set_(v0)
    return (v1, v0)


def inputs(k):
    return (torch.ones(1),)
'''[1:]

BACKEND = 'cudagraphs'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'aliasing-aliasing-shares_output_to_is_output'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
