# pytest-cgraph entry
# signature: crash-compiled_call-BackendCompilerFailed_RuntimeError-more_than_one_element_of_the_8dad4d-aot_eager
# base signature: crash-compiled_call-BackendCompilerFailed_RuntimeError-more_than_one_element_of_the_8dad4d
# layer: aot_eager
# failure: crash difference at iteration 1, compiled call: BackendCompilerFailed.RuntimeError: more than one element of the written-to tensor refers to a single memory location
# first diverging layer: aot_eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: aot_eager; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: crash-compiled_call-BackendCompilerFailed_RuntimeError-more_than_one_element_of_the_8dad4d-aot_eager.py; replay: python -m pytest_cgraph.record crash-compiled_call-BackendCompilerFailed_RuntimeError-more_than_one_element_of_the_8dad4d-aot_eager.py --backend aot_eager
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# An input with internal overlap (an expanded tensor) filled in place. Eager
# allows fill_ on it; functionalization bans mutating tensors with internal
# overlap, so the compiled call raises. Same class as pytorch/pytorch#165409.
import torch


def program(a0):
    a0.fill_(1.5)
    return (a0 + 0,)


def inputs(k):
    return (torch.zeros(1, 2).expand(2, 2),)
'''[1:]

BACKEND = 'aot_eager'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'crash-compiled_call-BackendCompilerFailed_RuntimeError-more_than_one_element_of_the_8dad4d'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
