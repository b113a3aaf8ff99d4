# pytest-cgraph entry
# signature: aliasing-aliasing-shares_argument_shares_output_to_none-aot_eager
# base signature: aliasing-aliasing-shares_argument_shares_output_to_none
# layer: aot_eager
# failure: aliasing difference at iteration 1, aliasing of output #1
# first diverging layer: aot_eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: cudagraphs; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: aliasing-aliasing-shares_argument_shares_output_to_none-aot_eager.py; replay: python -m pytest_cgraph.record aliasing-aliasing-shares_argument_shares_output_to_none-aot_eager.py --backend cudagraphs
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# Returns the argument a0 and a view of dropout(a0, training=False).
# Eager: dropout returns a0 itself when train=False, so output #1 shares storage with a0 and output #0.
# Compiled: AOTAutograd decomposes aten.dropout (train=False) to input.clone(); output #1 is a view
# of a fresh tensor and aliases nothing. First diverging layer: aot_eager.
# Open issue: pytorch/pytorch#115249 (aten.dropout decomposition clones when train=False).
import torch


def program(a0):
    v0 = torch.nn.functional.dropout(a0, 0.5, training=False)
    return (a0, v0.view(-1))


def inputs(k):
    return (torch.ones(1),)
'''[1:]

BACKEND = 'cudagraphs'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'aliasing-aliasing-shares_argument_shares_output_to_none'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
