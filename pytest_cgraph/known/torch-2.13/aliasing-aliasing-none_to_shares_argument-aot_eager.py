# pytest-cgraph entry
# signature: aliasing-aliasing-none_to_shares_argument-aot_eager
# base signature: aliasing-aliasing-none_to_shares_argument
# layer: aot_eager
# failure: aliasing difference at iteration 1, aliasing of output #0
# first diverging layer: aot_eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: aot_eager; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: data_assign_view.py; replay: python -m pytest_cgraph.record data_assign_view.py --backend aot_eager
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# `.data =` on an input after taking a view of it: eager's view keeps the OLD storage
# (no longer the argument's), compiled returns a view sharing the argument's NEW storage.
# eager relation none -> compiled shares_argument; diverges at aot_eager (dynamo+aot functionalization
# of .data assignment). Same class as the already-recorded `.data =` assignment.
import torch


def program(a0):
    v0 = a0.unsqueeze(0)
    a0.data = a0.data.flip(0)
    return (v0,)


def inputs(k):
    return (torch.ones(1),)
'''[1:]

BACKEND = 'aot_eager'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'aliasing-aliasing-none_to_shares_argument'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
