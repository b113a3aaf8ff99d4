# pytest-cgraph entry
# signature: mutation-argument-aot_eager
# base signature: mutation-argument
# layer: aot_eager
# failure: mutation difference at iteration 2, argument a0
# first diverging layer: aot_eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: aot_eager; device: cpu; iterations: 2
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: aliased_then_distinct_mutated_inputs.py; replay: python -m pytest_cgraph.record aliased_then_distinct_mutated_inputs.py --backend aot_eager
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
import torch


# Call 1: a1 is a view of a0 (same storage) -> AOTAutograd compiles a synthetic-base graph (a0 += a0).
# Call 2: a0, a1 are distinct tensors; Dynamo guards only check a0 is not a1 (NO_TENSOR_ALIASING), no storage-overlap
# guard, so the aliased graph is reused: compiled a0 = 2*a0 (a1 ignored), eager a0 = a0 + a1. Also with dynamic=True.
# First diverging layer: aot_eager (backend="eager" agrees). Mirror of open pytorch/pytorch#139789 (non-aliased first,
# aliased second); open PR pytorch/pytorch#185891 mentions the overlap -> non-overlap transition.
def program(a0, a1):
    a0.add_(a1)
    return ()


def inputs(k):
    a0 = torch.ones(1)
    a1 = a0.view(1) if k == 1 else torch.zeros(1)
    return (a0, a1)


FRESH_INPUTS = True
ITERS = 2
'''[1:]

BACKEND = 'aot_eager'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'mutation-argument'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
