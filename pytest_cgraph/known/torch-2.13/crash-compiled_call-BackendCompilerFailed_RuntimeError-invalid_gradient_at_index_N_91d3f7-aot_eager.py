# pytest-cgraph entry
# signature: crash-compiled_call-BackendCompilerFailed_RuntimeError-invalid_gradient_at_index_N_91d3f7-aot_eager
# base signature: crash-compiled_call-BackendCompilerFailed_RuntimeError-invalid_gradient_at_index_N_91d3f7
# layer: aot_eager
# failure: crash difference at iteration 1, compiled call: BackendCompilerFailed.RuntimeError: invalid gradient at index 0 - got [1] but expected shape compatible with [1, 1]
# first diverging layer: aot_eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: cudagraphs; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: view_then_unsqueeze_.py; replay: python -m pytest_cgraph.record view_then_unsqueeze_.py --backend cudagraphs
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# A view (t()) of an intermediate is taken, then the base gets an in-place metadata op (unsqueeze_), and the view is returned.
# Eager: output shape (1,), grad_fn regenerated as AsStridedBackward0, backward gives a0.grad == [1.].
# Compiled: AOTAutograd's joint trace (functionalization replays the view against the re-shaped base) fails:
# "invalid gradient at index 0 - got [1] but expected shape compatible with [1, 1]" (BackendCompilerFailed).
# First diverging layer: aot_eager (Dynamo-only 'eager' backend agrees). Also with v1 = v0[:]; not with v0.view(-1).
# Related: pytorch/pytorch#90507 (functionalized inplace-view metadata), PR #186561 (aliases rooted before a metadata mutation).
import torch


def program(a0):
    v0 = a0.clone()
    v1 = v0.t()
    v0.unsqueeze_(0)
    return (v1,)


def inputs(k):
    return (torch.ones(1, requires_grad=True),)
'''[1:]

BACKEND = 'cudagraphs'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'crash-compiled_call-BackendCompilerFailed_RuntimeError-invalid_gradient_at_index_N_91d3f7'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
