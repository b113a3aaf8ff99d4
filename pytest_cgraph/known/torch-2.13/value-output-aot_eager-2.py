# pytest-cgraph entry
# signature: value-output-aot_eager
# base signature: value-output
# layer: aot_eager
# failure: value difference at iteration 1, output #0
# first diverging layer: aot_eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: aot_eager; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: as_strided_inplace_escapes_view_output.py; replay: python -m pytest_cgraph.record as_strided_inplace_escapes_view_output.py --backend aot_eager
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
import torch


# as_strided_ re-strides a view (a0[::2], storage elements 0, 2) onto storage elements its view did not cover (0, 1);
# add_ then writes through it. Eager writes storage 0 and 1: v0 == [1, 1]. Compiled: functionalization scatters the
# update back with as_strided_scatter relative to the view (not the storage), so element 1 is lost: v0 == [1, 0].
# Input-free too (same with a clone's view). First diverging layer: aot_eager. Related: pytorch/pytorch#104505
# (closed; as_strided viewing outside a tensor "will not work well with functionalization"), #120585 (open).
def program(a0):
    v0 = a0[::2]
    v0.as_strided_((2,), (1,))
    v0.add_(1)
    return (v0,)


def inputs(k):
    return (torch.zeros(4),)
'''[1:]

BACKEND = 'aot_eager'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'value-output'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
