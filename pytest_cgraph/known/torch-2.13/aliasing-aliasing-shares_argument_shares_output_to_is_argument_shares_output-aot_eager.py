# pytest-cgraph entry
# signature: aliasing-aliasing-shares_argument_shares_output_to_is_argument_shares_output-aot_eager
# base signature: aliasing-aliasing-shares_argument_shares_output_to_is_argument_shares_output
# layer: aot_eager
# failure: aliasing difference at iteration 1, aliasing of output #1
# first diverging layer: aot_eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: cudagraphs; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: set_onto_input_is_arg.py; replay: python -m pytest_cgraph.record set_onto_input_is_arg.py --backend cudagraphs
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# set_() of an intermediate onto the graph input a0, returned next to a view of a0.
# Eager: v is a distinct tensor object that shares a0's storage (and output #0's).
# Compiled: functionalization turns v into a0 itself, so output #1 `is` argument a0.
# First diverges at aot_eager (eager backend = Dynamo only matches). Same as the known set_()-onto-inputs case.
import torch


def program(a0):
    v = a0 + 1
    v.set_(a0)
    return (a0.view(-1), v)


def inputs(k):
    return (torch.ones(1),)
'''[1:]

BACKEND = 'cudagraphs'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'aliasing-aliasing-shares_argument_shares_output_to_is_argument_shares_output'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
