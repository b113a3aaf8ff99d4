# pytest-cgraph entry
# signature: crash-compiled_call-BackendCompilerFailed_AssertionError-aot_autograd_does_not_yet_handle_non_dif_d34c46-aot_eager
# base signature: crash-compiled_call-BackendCompilerFailed_AssertionError-aot_autograd_does_not_yet_handle_non_dif_d34c46
# layer: aot_eager
# failure: crash difference at iteration 1, compiled call: BackendCompilerFailed.AssertionError: aot_autograd() does not yet handle non-differentiable view input mutations. input 0 (v0) and input 1 (___stack0) share storage but are not differentiable views of each other.
# first diverging layer: aot_eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: aot_eager; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: crash-compiled_call-BackendCompilerFailed_AssertionError-aot_autograd_does_not_yet_handle_non_dif_d34c46-aot_eager.py; replay: python -m pytest_cgraph.record crash-compiled_call-BackendCompilerFailed_AssertionError-aot_autograd_does_not_yet_handle_non_dif_d34c46-aot_eager.py --backend aot_eager
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# As detached_alias_added_into_base, returning the detached alias instead:
# AOTAutograd refuses the graph ("does not yet handle non-differentiable
# view input mutations"): a documented limitation, a crash where eager runs.
import torch


def program(a0):
    v0 = a0 + 2
    v1 = v0.detach().requires_grad_()
    v0.add_(v1)
    return (v1,)


def inputs(k):
    return (torch.ones(1, 1),)
'''[1:]

BACKEND = 'aot_eager'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'crash-compiled_call-BackendCompilerFailed_AssertionError-aot_autograd_does_not_yet_handle_non_dif_d34c46'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
