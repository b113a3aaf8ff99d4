# pytest-cgraph entry
# signature: crash-compiled_call-BackendCompilerFailed_RuntimeError-one_of_the_variables_needed_for_e2c5be-aot_eager
# base signature: crash-compiled_call-BackendCompilerFailed_RuntimeError-one_of_the_variables_needed_for_e2c5be
# layer: aot_eager
# failure: crash difference at iteration 1, compiled call: BackendCompilerFailed.RuntimeError: one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [1]], which is output 0 of Mul, is at version 1; expected version 0 instead. Hint: the backtrace further above shows the operation that failed to compute its gradient. The variable in question was changed in there or anywhere later. Good luck!
# first diverging layer: aot_eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: aot_eager; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: self_mul_inplace.py; replay: python -m pytest_cgraph.record self_mul_inplace.py --backend aot_eager
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# v0 = a0.clone() (requires grad) crosses a graph break, then v0.mul_(v0) (mul_ saves v0, then overwrites it).
# v0 is never returned, so eager never backprops through it: eager is fine.
# Compiled (aot_eager): graph 2 takes v0 as a requires-grad input; AOTAutograd traces the backward at compile time
# and hits the version check -> BackendCompilerFailed "one of the variables needed for gradient computation has been
# modified by an inplace operation". First diverging layer: aot_eager; same mechanism as pytorch/pytorch#158561.
import torch


def program(a0):
    v0 = a0.clone()
    torch._dynamo.graph_break()
    v0.mul_(v0)
    return (torch.zeros_like(a0),)


def inputs(k):
    return (torch.ones((1,), requires_grad=True),)
'''[1:]

BACKEND = 'aot_eager'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'crash-compiled_call-BackendCompilerFailed_RuntimeError-one_of_the_variables_needed_for_e2c5be'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
