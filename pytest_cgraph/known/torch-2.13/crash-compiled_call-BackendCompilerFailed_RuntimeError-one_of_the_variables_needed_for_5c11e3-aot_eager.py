# pytest-cgraph entry
# signature: crash-compiled_call-BackendCompilerFailed_RuntimeError-one_of_the_variables_needed_for_5c11e3-aot_eager
# base signature: crash-compiled_call-BackendCompilerFailed_RuntimeError-one_of_the_variables_needed_for_5c11e3
# layer: aot_eager
# failure: crash difference at iteration 1, compiled call: BackendCompilerFailed.RuntimeError: one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [1]], which is output 0 of torch::autograd::Error, is at version 1; expected version 0 instead. Hint: the backtrace further above shows the operation that failed to compute its gradient. The variable in question was changed in there or anywhere later. Good luck!
# first diverging layer: aot_eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: aot_eager; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: nograd_leaf_mul.py; replay: python -m pytest_cgraph.record nograd_leaf_mul.py --backend aot_eager
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# a0 (leaf, requires grad) is used in v0 = a0*a0 (saves a0), then scaled in place under no_grad;
# v0 stays live across a graph break but is never returned, so eager never backprops through it.
# Eager: fine (forward + backward of the returned a0.clone()). Compiled (aot_eager): the graph break makes
# v0 an output of graph 1; AOTAutograd traces its backward at compile time and hits a0's bumped version ->
# BackendCompilerFailed "one of the variables needed for gradient computation has been modified". Related pytorch/pytorch#158561.
import torch


def program(a0):
    v0 = a0 * a0
    with torch.no_grad():
        a0.mul_(0.9)
    torch._dynamo.graph_break()
    v0.add_(2)
    return (a0.clone(),)


def inputs(k):
    return (torch.ones((1,), requires_grad=True),)
'''[1:]

BACKEND = 'aot_eager'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'crash-compiled_call-BackendCompilerFailed_RuntimeError-one_of_the_variables_needed_for_5c11e3'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
