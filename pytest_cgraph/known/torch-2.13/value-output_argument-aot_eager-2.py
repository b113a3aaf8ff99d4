# pytest-cgraph entry
# signature: value-output_argument-aot_eager
# base signature: value-output_argument
# layer: aot_eager
# failure: value difference at iteration 1, output #0 (argument a0)
# first diverging layer: aot_eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: cudagraphs; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: value-output_argument-aot_eager-2.py; replay: python -m pytest_cgraph.record value-output_argument-aot_eager-2.py --backend cudagraphs
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# F.dropout(a0, training=False) then mutate its result in place; return a0.
# Eager: dropout in eval mode returns the input tensor itself, so add_ mutates a0 -> a0 == 1.
# Compiled (aot_eager and up): AOTAutograd/functionalization treats dropout's result as a fresh
# tensor (no alias), so the add_ never reaches a0 -> a0 stays 0.
# First diverging layer: aot_eager (dropout decomposed to clone). Known: pytorch/pytorch#115249, #195422.
import torch


def program(a0):
    v2 = torch.nn.functional.dropout(a0, 0.5, training=False)
    v2.add_(1)
    return (a0,)


def inputs(k):
    return (torch.zeros(2),)
'''[1:]

BACKEND = 'cudagraphs'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'value-output_argument'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
