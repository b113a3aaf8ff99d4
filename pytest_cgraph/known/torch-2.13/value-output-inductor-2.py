# pytest-cgraph entry
# signature: value-output-inductor
# base signature: value-output
# layer: inductor
# failure: value difference at iteration 1, output #0
# first diverging layer: inductor (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: inductor; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: value-output-inductor-2.py; replay: python -m pytest_cgraph.record value-output-inductor-2.py --backend inductor
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# Chained random ops (dropout, bernoulli, randn_like) on a strided input
# and a one-element buffer: with Inductor's fallback_random (random ops
# run as eager's), the compiled randn_like values differ from eager's. A
# second program of the fallback_random class; dropping the unused random
# ops or the strided input makes the difference go away.
import torch


def program(a0, b1):
    v0 = a0.clone()
    v1 = torch.nn.functional.dropout(v0, 0.2)
    v2 = torch.bernoulli(torch.full_like(v1, 0.5))
    v3 = b1 * torch.randn_like(b1)
    v4 = torch.nn.functional.dropout(b1, 0.5)
    v5 = torch.bernoulli(torch.full_like(a0, 0.5))
    return (v3, v0,)


def inputs(k):
    g = torch.Generator().manual_seed(1000)
    a0 = torch.randn((6,), generator=g)[::2]
    b1 = torch.randn((1,), generator=g)
    return (a0, b1,)


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
