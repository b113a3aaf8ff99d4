# pytest-cgraph entry
# signature: crash-compiled_call-RuntimeError-unsupported_operation_more_than_one_elem_f687b2-aot_eager
# base signature: crash-compiled_call-RuntimeError-unsupported_operation_more_than_one_elem_f687b2
# layer: aot_eager
# failure: crash difference at iteration 1, compiled call: RuntimeError: unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.
# first diverging layer: aot_eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: cudagraphs; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: crash-compiled_call-RuntimeError-unsupported_operation_more_than_one_elem_f687b2-aot_eager.py; replay: python -m pytest_cgraph.record crash-compiled_call-RuntimeError-unsupported_operation_more_than_one_elem_f687b2-aot_eager.py --backend cudagraphs
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# add_ into one element of an expanded input (through a slice and a
# select): eager writes the element (the expanded tensor's one memory
# location); compiled raises "unsupported operation: more than one element
# of the written-to tensor refers to a single memory location" when it
# writes the mutation back to the input. Same class as the baseline's
# fill_ of an expanded input (pytorch/pytorch#165409); with a zeros input
# the same program fails at compile time with that entry's message instead.
import torch


def program(a0):
    v0 = a0[0::1]
    v1 = v0.select(0, 0)
    v1.add_(2)
    return (v1,)


def inputs(k):
    g = torch.Generator().manual_seed(1000)
    a0 = torch.randn((1,), generator=g).expand(3)
    return (a0,)


FRESH_INPUTS = False
ITERS = 5
'''[1:]

BACKEND = 'cudagraphs'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'crash-compiled_call-RuntimeError-unsupported_operation_more_than_one_elem_f687b2'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
