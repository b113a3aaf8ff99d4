# pytest-cgraph entry
# signature: crash-compiled_call-BackendCompilerFailed_RuntimeError-as_strided_scatter_sizes_SHAPE_strides_S_bc2adb-aot_eager
# base signature: crash-compiled_call-BackendCompilerFailed_RuntimeError-as_strided_scatter_sizes_SHAPE_strides_S_bc2adb
# layer: aot_eager
# failure: crash difference at iteration 1, compiled call: BackendCompilerFailed.RuntimeError: as_strided_scatter: sizes [4], strides [1], storage offset 0  and itemsize 4 requiring a storage size of 16 are out of bounds for storage of size 8
# first diverging layer: aot_eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: cudagraphs; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: crash-compiled_call-BackendCompilerFailed_RuntimeError-as_strided_scatter_sizes_SHAPE_strides_S_bc2adb-aot_eager.py; replay: python -m pytest_cgraph.record crash-compiled_call-BackendCompilerFailed_RuntimeError-as_strided_scatter_sizes_SHAPE_strides_S_bc2adb-aot_eager.py --backend cudagraphs
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# resize_ grows a narrowed view of an input past its base's
# storage, then scatter_ writes through an earlier view of it: eager runs;
# AOTAutograd's functionalization crashes in as_strided_scatter (sizes and
# strides out of bounds of the resized storage).
import torch


def program(a0):
    v1 = a0.narrow(0, 0, 1)
    v2 = v1[:, 1::2]
    v1.resize_(4).fill_(2.0)
    v2.scatter_(2, torch.zeros_like(v2, dtype=torch.long), 2.0)
    return (a0,)


def inputs(k):
    return (torch.ones(1, 2, 1),)
'''[1:]

BACKEND = 'cudagraphs'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'crash-compiled_call-BackendCompilerFailed_RuntimeError-as_strided_scatter_sizes_SHAPE_strides_S_bc2adb'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
