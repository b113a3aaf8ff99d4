# pytest-cgraph entry
# signature: crash-compiled_call-BackendCompilerFailed_RuntimeError-one_of_the_variables_needed_for_35d472-aot_eager
# base signature: crash-compiled_call-BackendCompilerFailed_RuntimeError-one_of_the_variables_needed_for_35d472
# layer: aot_eager
# failure: crash difference at iteration 1, compiled call: BackendCompilerFailed.RuntimeError: one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [2]], which is output 0 of Clone, is at version 1; expected version 0 instead. Hint: the backtrace further above shows the operation that failed to compute its gradient. The variable in question was changed in there or anywhere later. Good luck!
# first diverging layer: aot_eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: cudagraphs; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: crash-compiled_call-BackendCompilerFailed_RuntimeError-one_of_the_variables_needed_for_35d472-aot_eager.py; replay: python -m pytest_cgraph.record crash-compiled_call-BackendCompilerFailed_RuntimeError-one_of_the_variables_needed_for_35d472-aot_eager.py --backend cudagraphs
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# sin(p) saves p for backward; p (a Parameter) is then mutated in place under no_grad, and
# sin(p) leaves the Dynamo graph (graph break) as an output requiring grad. No backward is ever
# called, so eager runs fine (returns sin(1) detached). Related: pytorch/pytorch#158561.
# Compiled (aot_eager and up): AOTAutograd traces the joint fwd/bwd graph at compile time,
# the backward of sin sees the version-bumped saved input and raises "one of the variables
# needed for gradient computation has been modified by an inplace operation". First diverging: aot_eager.
import torch


def program(p):
    v0 = torch.sin(p)
    with torch.no_grad():
        p.mul_(0.9)
    torch._dynamo.graph_break()
    return (v0.detach(),)


def inputs(k):
    return (torch.nn.Parameter(torch.ones(2)),)
'''[1:]

BACKEND = 'cudagraphs'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'crash-compiled_call-BackendCompilerFailed_RuntimeError-one_of_the_variables_needed_for_35d472'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
