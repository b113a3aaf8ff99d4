# pytest-cgraph entry
# signature: crash-compiled_backward-RuntimeError-one_of_the_variables_needed_for_778db3-aot_eager
# base signature: crash-compiled_backward-RuntimeError-one_of_the_variables_needed_for_778db3
# layer: aot_eager
# failure: crash difference at iteration 1, compiled backward: RuntimeError: one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [1]], which is output 0 of torch::autograd::CopyBackwards, is at version 2; expected version 1 instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).
# first diverging layer: aot_eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: aot_eager; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: crash-compiled_backward-RuntimeError-one_of_the_variables_needed_for_778db3.py; replay: python -m pytest_cgraph.record crash-compiled_backward-RuntimeError-one_of_the_variables_needed_for_778db3.py --backend aot_eager
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# family: autograd · schedule: persistent · iterations: 5
import torch


def program(a0, a1):
    a1.mul_(a0)
    return (a1,)


def inputs(k):
    g = torch.Generator().manual_seed(1000)
    a0 = torch.randn((1,), generator=g)
    a0.requires_grad_(True)
    a1 = torch.randn((1,), generator=g)
    return (a0, a1,)


FRESH_INPUTS = False
ITERS = 5
'''[1:]

BACKEND = 'aot_eager'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'crash-compiled_backward-RuntimeError-one_of_the_variables_needed_for_778db3'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
