# pytest-cgraph entry
# signature: crash-compiled_call-BackendCompilerFailed_AssertionError-Expected_native_dropout_to_be_a_tensor_ad27d4-cudagraphs
# base signature: crash-compiled_call-BackendCompilerFailed_AssertionError-Expected_native_dropout_to_be_a_tensor_ad27d4
# layer: cudagraphs
# failure: crash difference at iteration 1, compiled call: BackendCompilerFailed.AssertionError: Expected native_dropout to be a tensor
# first diverging layer: cudagraphs (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: yes
# backend: cudagraphs; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: crash-compiled_call-BackendCompilerFailed_AssertionError-Expected_native_dropout_to_be_a_tensor_ad27d4-cudagraphs.py; replay: python -m pytest_cgraph.record crash-compiled_call-BackendCompilerFailed_AssertionError-Expected_native_dropout_to_be_a_tensor_ad27d4-cudagraphs.py --backend cudagraphs
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# The cudagraphs backend's partitioner, with Inductor's fallback_random=True
# (which the harness sets so random ops compare with eager), asserts
# "Expected native_dropout to be a tensor" on this chain of random ops with
# a parameter. aot_eager and aot_eager_decomp_partition compile it. Related:
# pytorch/pytorch#135459.
import torch


def program(a0, p1):
    v0 = torch.sin(p1)
    v1 = v0 + torch.rand_like(v0)
    v2 = torch.zeros_like(v1)
    v3 = v2 + torch.rand_like(v2)
    v4 = v3 + torch.rand_like(v3)
    v5 = torch.nn.functional.dropout(v4, 0.5)
    return (v1,)


def inputs(k):
    return (torch.zeros(1, dtype=torch.long), torch.nn.Parameter(torch.ones(1)))
'''[1:]

BACKEND = 'cudagraphs'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'crash-compiled_call-BackendCompilerFailed_AssertionError-Expected_native_dropout_to_be_a_tensor_ad27d4'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
