# pytest-cgraph entry
# signature: crash-compiled_call-TorchRuntimeError-RuntimeError_when_making_fake_tensor_cal_4f1691-eager
# base signature: crash-compiled_call-TorchRuntimeError-RuntimeError_when_making_fake_tensor_cal_4f1691
# layer: eager
# failure: crash difference at iteration 1, compiled call: TorchRuntimeError: RuntimeError when making fake tensor call: ValueError: Attempting to permute a tensor of rank 1, but received a permutation of length 3!
# first diverging layer: eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: cudagraphs; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: permute_range.py; replay: python -m pytest_cgraph.record permute_range.py --backend cudagraphs
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# permute(*range(n - 1, -1, -1)): Dynamo unpacks a range with a negative
# step into the wrong permutation (0, -1, -1 for a rank-1 tensor) and fails
# while tracing ("Attempting to permute a tensor of rank 1, but received a
# permutation of length 3"): eager runs, for any input.
import torch


def program(a0):
    return (a0.permute(*range(a0.dim() - 1, -1, -1)),)


def inputs(k):
    return (torch.ones(2),)
'''[1:]

BACKEND = 'cudagraphs'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'crash-compiled_call-TorchRuntimeError-RuntimeError_when_making_fake_tensor_cal_4f1691'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
