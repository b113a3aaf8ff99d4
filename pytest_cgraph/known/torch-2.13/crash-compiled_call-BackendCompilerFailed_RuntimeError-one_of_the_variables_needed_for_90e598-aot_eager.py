# pytest-cgraph entry
# signature: crash-compiled_call-BackendCompilerFailed_RuntimeError-one_of_the_variables_needed_for_90e598-aot_eager
# base signature: crash-compiled_call-BackendCompilerFailed_RuntimeError-one_of_the_variables_needed_for_90e598
# layer: aot_eager
# failure: crash difference at iteration 1, compiled call: BackendCompilerFailed.RuntimeError: one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [1, 1]] is at version 1; expected version 0 instead. Hint: the backtrace further above shows the operation that failed to compute its gradient. The variable in question was changed in there or anywhere later. Good luck!
# first diverging layer: aot_eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: aot_eager; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: input_mut_after_save.py; replay: python -m pytest_cgraph.record input_mut_after_save.py --backend aot_eager
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# v0 = a0 * w saves a0 (for w's grad); a0 is then mutated in place; v0.data is reassigned (forces v0 to be a graph output).
# v0 is never returned and the returned a0+2 needs no grad, so eager never backprops: eager is fine.
# Compiled (aot_eager): AOTAutograd traces v0's backward at compile time and sees a0's bumped version ->
# BackendCompilerFailed "one of the variables needed for gradient computation has been modified by an inplace operation".
# First diverging layer: aot_eager; same mechanism as pytorch/pytorch#158561.
import torch


def program(a0, w):
    v0 = a0 * w
    a0.add_(2)
    v0.data = v0.data * 2
    return (a0 + 2,)


def inputs(k):
    return (torch.ones((1, 1)), torch.nn.Parameter(torch.full((1,), 0.5)))
'''[1:]

BACKEND = 'aot_eager'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'crash-compiled_call-BackendCompilerFailed_RuntimeError-one_of_the_variables_needed_for_90e598'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
