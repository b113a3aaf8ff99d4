# pytest-cgraph entry
# signature: crash-compiled_call-InternalTorchDynamoError-RuntimeError_self_size_N_must_be_divisib_b48f23-eager
# base signature: crash-compiled_call-InternalTorchDynamoError-RuntimeError_self_size_N_must_be_divisib_b48f23
# layer: eager
# failure: crash difference at iteration 1, compiled call: InternalTorchDynamoError: RuntimeError: self.size(-1) must be divisible by 8 to view Bool as Long (different element sizes), but got 1
# first diverging layer: eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: cudagraphs; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: crash-compiled_call-InternalTorchDynamoError-RuntimeError_self_size_N_must_be_divisib_b48f23-eager.py; replay: python -m pytest_cgraph.record crash-compiled_call-InternalTorchDynamoError-RuntimeError_self_size_N_must_be_divisib_b48f23-eager.py --backend cudagraphs
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# a0 is a view (transpose) of a bool tensor; `a0.data = a0.data * 2` swaps in an int64 tensor.
# Eager: fine every call; afterwards a0 is int64 but still _is_view() with its old *bool* _base.
# Compiled: call 1 fine; call 2 recompiles (dtype guard) and Dynamo fakification replays the view
# from the stale bool base -> InternalTorchDynamoError "self.size(-1) must be divisible by 8 to view Bool as Long".
# First diverging layer: eager (Dynamo only).
import torch


def program(a0):
    a0.data = a0.data * 2
    return (a0,)


def inputs(k):
    return (torch.ones(1, 1, dtype=torch.bool).t(),)
'''[1:]

BACKEND = 'cudagraphs'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'crash-compiled_call-InternalTorchDynamoError-RuntimeError_self_size_N_must_be_divisib_b48f23'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
