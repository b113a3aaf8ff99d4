# pytest-cgraph entry
# signature: aliasing-aliasing-shares_argument_shares_output_to_none-aot_eager
# base signature: aliasing-aliasing-shares_argument_shares_output_to_none
# layer: aot_eager
# failure: aliasing difference at iteration 1, aliasing of output #1
# first diverging layer: aot_eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: aot_eager; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: nograd_mut_unbind_with_arg.py; replay: python -m pytest_cgraph.record nograd_mut_unbind_with_arg.py --backend aot_eager
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# Same root as nograd_mut_unbind.py, also returning the argument: eager's unbind view shares
# storage with the argument AND with output 0 (which is a0); compiled's unbind output is a copy.
# eager shares_argument_shares_output -> compiled none; first diverging layer aot_eager.
# The Counter module of the original repro is irrelevant and was dropped.
import torch


def program(a0):
    with torch.no_grad():
        a0.mul_(0.9)
    v1 = a0.unbind(0)[0]
    return (a0, v1)


def inputs(k):
    return (torch.ones(1, requires_grad=True),)
'''[1:]

BACKEND = 'aot_eager'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'aliasing-aliasing-shares_argument_shares_output_to_none'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
