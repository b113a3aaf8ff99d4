# pytest-cgraph entry
# signature: crash-compiled_call-BackendCompilerFailed_AssertionError-Expected_NAME_to_be_a_tensor_c87e75-cudagraphs
# base signature: crash-compiled_call-BackendCompilerFailed_AssertionError-Expected_NAME_to_be_a_tensor_c87e75
# layer: cudagraphs
# failure: crash difference at iteration 1, compiled call: BackendCompilerFailed.AssertionError: Expected native_dropout_1 to be a tensor
# first diverging layer: cudagraphs (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: yes
# backend: cudagraphs; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: crash-compiled_call-BackendCompilerFailed_AssertionError-Expected_NAME_to_be_a_tensor_c87e75-cudagraphs.py; replay: python -m pytest_cgraph.record crash-compiled_call-BackendCompilerFailed_AssertionError-Expected_NAME_to_be_a_tensor_c87e75-cudagraphs.py --backend cudagraphs
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# Two dropouts in a row on an input that requires grad: the cudagraphs
# backend's partitioner asserts "Expected native_dropout_1 to be a tensor"
# (aot_eager runs it). The class of the recorded "Expected native_dropout
# to be a tensor"; FX numbers the second node, so its message differs.
import torch


def program(a0):
    v0 = torch.nn.functional.dropout(a0, 0.5)
    v1 = torch.nn.functional.dropout(v0, 0.5)
    return (v0,)


def inputs(k):
    return (torch.ones(1, requires_grad=True),)
'''[1:]

BACKEND = 'cudagraphs'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'crash-compiled_call-BackendCompilerFailed_AssertionError-Expected_NAME_to_be_a_tensor_c87e75'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
