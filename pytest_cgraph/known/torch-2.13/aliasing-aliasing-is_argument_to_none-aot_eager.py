# pytest-cgraph entry
# signature: aliasing-aliasing-is_argument_to_none-aot_eager
# base signature: aliasing-aliasing-is_argument_to_none
# layer: aot_eager
# failure: aliasing difference at iteration 1, aliasing of output #0
# first diverging layer: aot_eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: cudagraphs; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: aliasing-aliasing-is_argument_to_none-aot_eager.py; replay: python -m pytest_cgraph.record aliasing-aliasing-is_argument_to_none-aot_eager.py --backend cudagraphs
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# dropout(training=False) on an argument, returned directly.
# Eager: ATen's dropout returns `input` itself when train=False (output IS a0).
# Compiled: AOTAutograd's decomposition of aten.dropout returns input.clone() when not training,
# so the output is a fresh tensor (aliases nothing). First diverging layer: aot_eager.
# Schema `dropout(...) -> Tensor` declares no alias; eager aliasing contradicts it. Open issue: pytorch/pytorch#115249.
import torch


def program(a0):
    v0 = torch.nn.functional.dropout(a0, 0.5, training=False)
    return (v0,)


def inputs(k):
    return (torch.ones(1),)
'''[1:]

BACKEND = 'cudagraphs'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'aliasing-aliasing-is_argument_to_none'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
