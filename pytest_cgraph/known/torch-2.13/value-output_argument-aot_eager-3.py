# pytest-cgraph entry
# signature: value-output_argument-aot_eager
# base signature: value-output_argument
# layer: aot_eager
# failure: value difference at iteration 1, output #0 (argument a0)
# first diverging layer: aot_eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: aot_eager; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: as_strided_inplace_escapes_view_argument.py; replay: python -m pytest_cgraph.record as_strided_inplace_escapes_view_argument.py --backend aot_eager
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
import torch


# Same root as as_strided_inplace_escapes_view_output.py, observed on the argument: as_strided_ of a view of a0 onto
# storage elements outside that view, then add_. Eager a0 == [1, 1, 0, 0]; compiled a0 == [1, 0, 0, 0]
# (as_strided_scatter into the view's clone loses the write). Any dtype (unlike the float64-only squeeze_/clamp_
# baseline entry). First diverging layer: aot_eager. Related: pytorch/pytorch#104505, #120585.
def program(a0):
    v0 = a0[::2]
    v0.as_strided_((2,), (1,))
    v0.add_(1)
    return (a0,)


def inputs(k):
    return (torch.zeros(4),)
'''[1:]

BACKEND = 'aot_eager'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'value-output_argument'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
