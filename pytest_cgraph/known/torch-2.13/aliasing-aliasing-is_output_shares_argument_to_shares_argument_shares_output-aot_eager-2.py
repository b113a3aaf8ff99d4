# pytest-cgraph entry
# signature: aliasing-aliasing-is_output_shares_argument_to_shares_argument_shares_output-aot_eager
# base signature: aliasing-aliasing-is_output_shares_argument_to_shares_argument_shares_output
# layer: aot_eager
# failure: aliasing difference at iteration 1, aliasing of output #1
# first diverging layer: aot_eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: cudagraphs; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: contiguous_view_identity.py; replay: python -m pytest_cgraph.record contiguous_view_identity.py --backend cudagraphs
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# contiguous() on an already-contiguous view returns that same tensor object in eager
# (documented: "If self tensor is already in the specified memory format, this function returns the self tensor"),
# so eager's output #1 `is` output #0. Dynamo alone (eager backend) preserves this; under aot_eager the
# functionalized graph regenerates each view-of-input output separately, so output #1 only shares a0's storage
# with output #0. First diverges at aot_eager. Related: object identity of aliased outputs not preserved by AOTAutograd.
import torch


def program(a0):
    v0 = a0[0::1]
    return (v0.contiguous(), v0)


def inputs(k):
    return (torch.ones(1),)
'''[1:]

BACKEND = 'cudagraphs'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'aliasing-aliasing-is_output_shares_argument_to_shares_argument_shares_output'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
