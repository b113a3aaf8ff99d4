# pytest-cgraph entry
# signature: crash-compiled_backward-RuntimeError-one_of_the_variables_needed_for_d4969f-aot_eager
# base signature: crash-compiled_backward-RuntimeError-one_of_the_variables_needed_for_d4969f
# layer: aot_eager
# failure: crash difference at iteration 1, compiled backward: RuntimeError: one of the variables needed for gradient computation has been modified by an inplace operation: [CPUBFloat16Type [2, 3]] is at version 1; expected version 0 instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).
# first diverging layer: aot_eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: aot_eager; device: cpu; iterations: 1
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: relu_unused_output_inplace_bwd.py; replay: python -m pytest_cgraph.record relu_unused_output_inplace_bwd.py --backend aot_eager
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
import torch


def stage0(a0):
    return (a0 * 2, torch.relu(a0))


# Eager: program returns only v0, so backward runs only mul's node; relu's saved
# output (v1, mutated in place by add_ outside the compiled region) is never read -> OK.
# Compiled (aot_eager): stage0 is one autograd node whose backward covers both outputs,
# so the saved relu output's version counter is checked even though v1 gets no grad ->
# "one of the variables needed for gradient computation has been modified by an inplace operation".
def program(a0):
    (v0, v1) = stage0(a0)
    v1.add_(1)
    return (v0,)


def inputs(k):
    a0 = torch.randn((2, 3)).bfloat16()
    a0.requires_grad_(True)
    return (a0,)


FRESH_INPUTS = False
ITERS = 1
COMPILE = ('stage0',)
'''[1:]

BACKEND = 'aot_eager'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'crash-compiled_backward-RuntimeError-one_of_the_variables_needed_for_d4969f'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
