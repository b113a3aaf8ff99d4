# pytest-cgraph entry
# signature: crash-compiled_call-IndexError-Dimension_out_of_range_expected_to_cbcabf-aot_eager
# base signature: crash-compiled_call-IndexError-Dimension_out_of_range_expected_to_cbcabf
# layer: aot_eager
# failure: crash difference at iteration 1, compiled call: IndexError: Dimension out of range (expected to be in range of [-2, 1], but got 2)
# first diverging layer: aot_eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: aot_eager; device: cpu; iterations: 2
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: viewbase.py; replay: python -m pytest_cgraph.record viewbase.py --backend aot_eager
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# An input that is a view of a base of another rank, written through an
# as_strided view of itself, and returned as a view.
# Eager: the output is a0.unsqueeze(2), shape (1, 1, 1).
# Compiled: AOTAutograd regenerates the output alias by replaying its view
# steps (unsqueeze(2)) on the input's 1-D base instead of on a0, and the call
# raises IndexError: Dimension out of range. First diverging layer: aot_eager.
# The same input built as a view of a (1, 1) base compiles correctly.
# Related: pytorch/pytorch#198095 (view steps replayed on the wrong base).
import torch


def program(a0):
    a0.as_strided((1,), (1,), a0.storage_offset()).add_(1)
    return (a0.unsqueeze(2),)


def inputs(k):
    return (torch.ones(1).view(1, 1),)


ITERS = 2
'''[1:]

BACKEND = 'aot_eager'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'crash-compiled_call-IndexError-Dimension_out_of_range_expected_to_cbcabf'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
