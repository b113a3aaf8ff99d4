# pytest-cgraph entry
# signature: value-output-inductor
# base signature: value-output
# layer: inductor
# failure: value difference at iteration 1, output #0
# first diverging layer: inductor (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: inductor; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: value-output-inductor.py; replay: python -m pytest_cgraph.record value-output-inductor.py --backend inductor
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# family: rng · schedule: persistent · iterations: 5
import torch


def program(a0):
    v0 = a0.clone()
    v1 = a0 * torch.randn_like(a0)
    v2 = torch.relu(v1)
    v3 = torch.bernoulli(torch.full_like(v1, 0.5))
    v4 = v1 + torch.rand_like(v1)
    v5 = torch.bernoulli(torch.full_like(v2, 0.5))
    return (v4, v2, v3,)


def inputs(k):
    g = torch.Generator().manual_seed(1000)
    a0 = torch.randn((3, 3), generator=g, dtype=torch.float64)
    return (a0,)


FRESH_INPUTS = False
ITERS = 5
'''[1:]

BACKEND = 'inductor'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'value-output'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
