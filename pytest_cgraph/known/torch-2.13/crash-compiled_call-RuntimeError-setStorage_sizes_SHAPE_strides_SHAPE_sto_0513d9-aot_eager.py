# pytest-cgraph entry
# signature: crash-compiled_call-RuntimeError-setStorage_sizes_SHAPE_strides_SHAPE_sto_0513d9-aot_eager
# base signature: crash-compiled_call-RuntimeError-setStorage_sizes_SHAPE_strides_SHAPE_sto_0513d9
# layer: aot_eager
# failure: crash difference at iteration 2, compiled call: RuntimeError: setStorage: sizes [4], strides [1], storage offset 0, and itemsize 4 requiring a storage size of 16 are out of bounds for storage of size 12
# first diverging layer: aot_eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: cudagraphs; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: crash-compiled_call-RuntimeError-setStorage_sizes_SHAPE_strides_SHAPE_sto_0513d9-aot_eager.py; replay: python -m pytest_cgraph.record crash-compiled_call-RuntimeError-setStorage_sizes_SHAPE_strides_SHAPE_sto_0513d9-aot_eager.py --backend cudagraphs
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# The second input is a view of the first on odd calls and a tensor of its
# own on even calls, and is written in place. The graph compiled for the
# aliased first call (inputs merged into a synthetic base) is reused for
# the unaliased second call, which crashes ("setStorage: ... out of bounds
# for storage"): eager runs. Related: pytorch/pytorch#139789 (the reverse
# direction: recompilation is not triggered when inputs start to alias).
import torch


def program(a0, a1):
    a1.mul_(2)
    return (a0 + a1.sum(),)


def inputs(k):
    a0 = torch.ones(4)
    a1 = a0[:3] if k % 2 else torch.ones(3)
    return (a0, a1)


FRESH_INPUTS = True
'''[1:]

BACKEND = 'cudagraphs'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'crash-compiled_call-RuntimeError-setStorage_sizes_SHAPE_strides_SHAPE_sto_0513d9'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
