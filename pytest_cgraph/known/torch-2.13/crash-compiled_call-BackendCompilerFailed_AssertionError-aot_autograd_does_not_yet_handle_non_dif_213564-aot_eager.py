# pytest-cgraph entry
# signature: crash-compiled_call-BackendCompilerFailed_AssertionError-aot_autograd_does_not_yet_handle_non_dif_213564-aot_eager
# base signature: crash-compiled_call-BackendCompilerFailed_AssertionError-aot_autograd_does_not_yet_handle_non_dif_213564
# layer: aot_eager
# failure: crash difference at iteration 1, compiled call: BackendCompilerFailed.AssertionError: aot_autograd() does not yet handle non-differentiable view input mutations. Aliased inputs share storage but have mixed autograd ._base states: ['input 0 (a0)'] have ._base set, while ['input 1 (___stack0)'] have ._base=None (and are not the synthetic base).
# first diverging layer: aot_eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: cudagraphs; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: crash-compiled_call-BackendCompilerFailed_AssertionError-aot_autograd_does_not_yet_handle_non_dif_213564-aot_eager.py; replay: python -m pytest_cgraph.record crash-compiled_call-BackendCompilerFailed_AssertionError-aot_autograd_does_not_yet_handle_non_dif_213564-aot_eager.py --backend cudagraphs
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# A detached alias of a transposed input is read by a later statement and
# returned after the input is written in place: AOTAutograd sees two inputs
# that share storage, one a view (._base set) and one not, and refuses the
# graph ("does not yet handle non-differentiable view input mutations ...
# mixed autograd ._base states"): a documented limitation, a crash where
# eager runs. A second message of the limitation recorded beside it.
import torch


def program(a0):
    v0 = a0.detach().requires_grad_()
    a0.add_(2)
    v1 = v0.clone()
    return (v0,)


def inputs(k):
    return (torch.ones(2, 3).t(),)
'''[1:]

BACKEND = 'cudagraphs'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'crash-compiled_call-BackendCompilerFailed_AssertionError-aot_autograd_does_not_yet_handle_non_dif_213564'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
