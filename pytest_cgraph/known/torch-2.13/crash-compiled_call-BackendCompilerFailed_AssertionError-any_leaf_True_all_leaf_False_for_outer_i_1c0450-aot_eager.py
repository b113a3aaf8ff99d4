# pytest-cgraph entry
# signature: crash-compiled_call-BackendCompilerFailed_AssertionError-any_leaf_True_all_leaf_False_for_outer_i_1c0450-aot_eager
# base signature: crash-compiled_call-BackendCompilerFailed_AssertionError-any_leaf_True_all_leaf_False_for_outer_i_1c0450
# layer: aot_eager
# failure: crash difference at iteration 1, compiled call: BackendCompilerFailed.AssertionError: any_leaf=True != all_leaf=False for outer_indices=[0, 1]
# first diverging layer: aot_eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: aot_eager; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: crash-compiled_call-BackendCompilerFailed_AssertionError-any_leaf_True_all_leaf_False_for_outer_i_1c0450-aot_eager.py; replay: python -m pytest_cgraph.record crash-compiled_call-BackendCompilerFailed_AssertionError-any_leaf_True_all_leaf_False_for_outer_i_1c0450-aot_eager.py --backend aot_eager
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# A leaf that requires grad, mutated under no_grad and returned twice, with a
# second argument that is a view of it: AOTAutograd asserts
# "any_leaf=True != all_leaf=False". Not found among torch's issues.
import torch


def program(a0, b1):
    with torch.no_grad():
        a0.mul_(0.9)
    return (a0, b1 * 1, a0)


def inputs(k):
    a0 = torch.ones(3, requires_grad=True)
    return (a0, a0.view(3))
'''[1:]

BACKEND = 'aot_eager'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'crash-compiled_call-BackendCompilerFailed_AssertionError-any_leaf_True_all_leaf_False_for_outer_i_1c0450'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
