# pytest-cgraph entry
# signature: grad-grad-presence-aot_eager
# base signature: grad-grad-presence
# layer: aot_eager
# failure: grad difference at iteration 2, grad of a0
# first diverging layer: aot_eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: aot_eager; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: view_leaf_nograd_mul.py; replay: python -m pytest_cgraph.record view_leaf_nograd_mul.py --backend aot_eager
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# a0 is a (non-grad-base) transposed view; v0 = a0.t(); a0.requires_grad_(); no_grad a0.mul_(0.9); return v0.
# iter 2 (a0 already requires grad): eager regenerates v0's grad_fn as AsStridedBackward0 on the no-grad base,
# so a0.grad stays None; aot_eager returns v0 with TBackward0 -> a0.grad = [[1.]]. First diverging layer: aot_eager.
# Related: view-of-leaf-view + no_grad in-place grad_fn regeneration (#90507 family of view/metadata issues).
import torch


def program(a0):
    v0 = a0.t()
    a0.requires_grad_()
    with torch.no_grad():
        a0.mul_(0.9)
    return (v0,)


def inputs(k):
    return (torch.ones(1, 1).t(),)
'''[1:]

BACKEND = 'aot_eager'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'grad-grad-presence'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
