# pytest-cgraph entry
# signature: aliasing-aliasing-is_output_shares_argument_to_shares_argument_shares_output-aot_eager
# base signature: aliasing-aliasing-is_output_shares_argument_to_shares_argument_shares_output
# layer: aot_eager
# failure: aliasing difference at iteration 1, aliasing of output #1
# first diverging layer: aot_eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: aot_eager; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: aliasing-aliasing-is_output_shares_argument_to_shares_argument_shares_output-aot_eager.py; replay: python -m pytest_cgraph.record aliasing-aliasing-is_output_shares_argument_to_shares_argument_shares_output-aot_eager.py --backend aot_eager
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# ``.to`` that changes nothing returns its input itself in eager (documented);
# under compile the result is a new view of the same memory, so "the same
# tensor twice" becomes "two aliasing tensors". Related: pytorch/pytorch#191844.
import torch


def program(a0):
    v0 = a0.t()
    return (v0, v0.to("cpu", non_blocking=True))


def inputs(k):
    return (torch.ones(2, 2),)
'''[1:]

BACKEND = 'aot_eager'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'aliasing-aliasing-is_output_shares_argument_to_shares_argument_shares_output'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
