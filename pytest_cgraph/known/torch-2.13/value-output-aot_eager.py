# pytest-cgraph entry
# signature: value-output-aot_eager
# base signature: value-output
# layer: aot_eager
# failure: value difference at iteration 1, output #0
# first diverging layer: aot_eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: aot_eager; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: rng_dead_randn.py; replay: python -m pytest_cgraph.record rng_dead_randn.py --backend aot_eager
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# Unused RNG draw: AOT autograd dead-code-eliminates the first randn_like (its result is unused),
# so the returned value consumes the generator's 1st draw instead of its 2nd.
# plain torch, seed 0: eager -0.2934 vs aot_eager 1.5410; backend="eager" matches (Dynamo graph keeps both).
# first diverging layer: aot_eager. Related: pytorch/pytorch#143431 (aot_eager changes CPU RNG), #147171.
import torch


def program(a0):
    v0 = a0 * torch.randn_like(a0)
    return (a0 * torch.randn_like(a0),)


def inputs(k):
    return (torch.ones(1, requires_grad=True),)
'''[1:]

BACKEND = 'aot_eager'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'value-output'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
