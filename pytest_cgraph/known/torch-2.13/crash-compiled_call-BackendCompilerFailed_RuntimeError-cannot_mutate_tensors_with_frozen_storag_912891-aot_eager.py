# pytest-cgraph entry
# signature: crash-compiled_call-BackendCompilerFailed_RuntimeError-cannot_mutate_tensors_with_frozen_storag_912891-aot_eager
# base signature: crash-compiled_call-BackendCompilerFailed_RuntimeError-cannot_mutate_tensors_with_frozen_storag_912891
# layer: aot_eager
# failure: crash difference at iteration 1, compiled call: BackendCompilerFailed.RuntimeError: cannot mutate tensors with frozen storage
# first diverging layer: aot_eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: aot_eager; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: crash-compiled_call-BackendCompilerFailed_RuntimeError-cannot_mutate_tensors_with_frozen_storag_912891-aot_eager.py; replay: python -m pytest_cgraph.record crash-compiled_call-BackendCompilerFailed_RuntimeError-cannot_mutate_tensors_with_frozen_storag_912891-aot_eager.py --backend aot_eager
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# set_() of a view of an input onto itself, then an in-place write: eager
# writes through to the input; compiled raises "cannot mutate tensors with
# frozen storage". Related: pytorch/pytorch#127571 (export), #197399.
import torch


def program(a0):
    v0 = a0[1]
    v0.set_(v0)
    v0.add_(1)
    return (a0,)


def inputs(k):
    return (torch.zeros(2, 2),)
'''[1:]

BACKEND = 'aot_eager'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'crash-compiled_call-BackendCompilerFailed_RuntimeError-cannot_mutate_tensors_with_frozen_storag_912891'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
