# pytest-cgraph entry
# signature: value-output_argument-aot_eager
# base signature: value-output_argument
# layer: aot_eager
# failure: value difference at iteration 1, output #0 (argument a0)
# first diverging layer: aot_eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: aot_eager; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: value-output_argument-aot_eager.py; replay: python -m pytest_cgraph.record value-output_argument-aot_eager.py --backend aot_eager
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# squeeze_ of an input (a metadata mutation) then clamp_ of it (a data
# mutation): eager clamps the input and returns it; aot_eager returns, and
# leaves in the input, the unclamped value. The data mutation after the
# metadata mutation is dropped. Only float64 (float32 agrees). Related: pytorch/pytorch#185888.
import torch


def program(a0):
    a0.squeeze_(0)
    a0.clamp_(min=-0.5, max=0.5)
    return (a0,)


def inputs(k):
    return (torch.tensor([-1.25, 2.0], dtype=torch.float64)[:1].clone(),)
'''[1:]

BACKEND = 'aot_eager'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'value-output_argument'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
