# pytest-cgraph entry
# signature: grad-grad-aot_eager
# base signature: grad-grad
# layer: aot_eager
# failure: grad difference at iteration 1, grad of a0
# first diverging layer: aot_eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: cudagraphs; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: view_then_as_strided_.py; replay: python -m pytest_cgraph.record view_then_as_strided_.py --backend cudagraphs
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# A view (t()) of an intermediate is taken, then the base is re-strided in place (as_strided_ to size 1); the view is returned.
# Eager: autograd regenerates the view's grad_fn as AsStridedBackward0 on the base's new geometry -> a0.grad == [1., 0.]
# (itself not the mathematically expected [1., 1.]). Compiled (aot_eager): the traced backward sums the tangent into
# element 0 -> a0.grad == [2., 0.]. Outputs agree. First diverging layer: aot_eager. Same family as view_then_unsqueeze_.py.
# Related: pytorch/pytorch#90507, PR #186561 (view replay after inplace metadata mutation).
import torch


def program(a0):
    v0 = a0.clone()
    v1 = v0.t()
    v0.as_strided_((1,), (1,))
    return (v1,)


def inputs(k):
    return (torch.ones(2, requires_grad=True),)
'''[1:]

BACKEND = 'cudagraphs'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'grad-grad'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
