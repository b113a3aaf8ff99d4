# pytest-cgraph entry
# signature: metadata-output-requires_grad-aot_eager
# base signature: metadata-output-requires_grad
# layer: aot_eager
# failure: metadata difference at iteration 1, output #0
# first diverging layer: aot_eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: aot_eager; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: metadata-output-requires_grad-aot_eager.py; replay: python -m pytest_cgraph.record metadata-output-requires_grad-aot_eager.py --backend aot_eager
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# v1 is a detached alias of an intermediate v0 that is then made to require
# grad, and v0.add_(v1) writes it into its own base: eager's v0 now requires
# grad (AddBackward0); the compiled output does not. The values agree.
import torch


def program(a0):
    v0 = a0 + 2
    v1 = v0.detach().requires_grad_()
    v0.add_(v1)
    return (v0,)


def inputs(k):
    return (torch.ones(1, 1),)
'''[1:]

BACKEND = 'aot_eager'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'metadata-output-requires_grad'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
