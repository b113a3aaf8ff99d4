# pytest-cgraph entry
# signature: crash-compiled_call-RuntimeError-Tensor_must_have_a_last_dimension_3a8f3f-aot_eager
# base signature: crash-compiled_call-RuntimeError-Tensor_must_have_a_last_dimension_3a8f3f
# layer: aot_eager
# failure: crash difference at iteration 1, compiled call: RuntimeError: Tensor must have a last dimension of size 2
# first diverging layer: aot_eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: cudagraphs; device: cpu; iterations: 1
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: synthetic_base_view_as_complex.py; replay: python -m pytest_cgraph.record synthetic_base_view_as_complex.py --backend cudagraphs
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
import torch


# Two aliasing inputs (a0 a view, a1 = a0[0]), one mutated in place, and an output
# that is view_as_complex(a0). Eager: returns the complex view. aot_eager/cudagraphs:
# AOTAutograd merges a0/a1 into a synthetic base and regenerates the output by replaying
# view_as_complex's ViewMeta on that flat base, raising RuntimeError "Tensor must have a
# last dimension of size 2" (functional_utils.gen_alias_from_base). Backend "eager" passes.
def program(a0, a1):
    v0 = torch.view_as_complex(a0)
    a1.add_(0.5)
    return (v0,)


def inputs(k):
    a0 = torch.randn(4).view(2, 2)
    a1 = a0[0]
    return (a0, a1,)


FRESH_INPUTS = False
ITERS = 1
'''[1:]

BACKEND = 'cudagraphs'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'crash-compiled_call-RuntimeError-Tensor_must_have_a_last_dimension_3a8f3f'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
