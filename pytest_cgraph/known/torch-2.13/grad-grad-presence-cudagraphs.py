# pytest-cgraph entry
# signature: grad-grad-presence-cudagraphs
# base signature: grad-grad-presence
# layer: cudagraphs
# failure: grad difference at iteration 1, grad of a0
# first diverging layer: cudagraphs (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: yes
# backend: cudagraphs; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: grad-grad-presence-cudagraphs.py; replay: python -m pytest_cgraph.record grad-grad-presence-cudagraphs.py --backend cudagraphs
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# The cudagraphs backend gives a leaf that was only mutated under no_grad
# (and feeds no output) a zero gradient; eager leaves its .grad None.
# aot_eager agrees with eager: specific to the CUDA-graph backend's path.
import torch


def program(a0, p1):
    with torch.no_grad():
        a0.mul_(0.9)
    return (p1 * 2,)


def inputs(k):
    return (torch.ones(2, requires_grad=True), torch.nn.Parameter(torch.ones(2)))
'''[1:]

BACKEND = 'cudagraphs'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'grad-grad-presence'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
