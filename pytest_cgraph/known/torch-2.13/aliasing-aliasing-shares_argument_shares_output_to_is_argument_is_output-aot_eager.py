# pytest-cgraph entry
# signature: aliasing-aliasing-shares_argument_shares_output_to_is_argument_is_output-aot_eager
# base signature: aliasing-aliasing-shares_argument_shares_output_to_is_argument_is_output
# layer: aot_eager
# failure: aliasing difference at iteration 1, aliasing of output #2
# first diverging layer: aot_eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: inductor; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: aliasing-aliasing-shares_argument_shares_output_to_is_argument_is_output-aot_eager.py; replay: python -m pytest_cgraph.record aliasing-aliasing-shares_argument_shares_output_to_is_argument_is_output-aot_eager.py --backend inductor
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# family: mutation · schedule: persistent · iterations: 5
import torch


def program(a0, n1):
    v0 = a0.squeeze(1)
    v1 = a0.sum(0)
    v2 = torch.empty_like(v0).fill_(0.25)
    v3 = v0.permute(*reversed(range(v0.dim())))
    v2.set_(a0)
    return (a0, a0, v2,)


def inputs(k):
    g = torch.Generator().manual_seed(1000)
    a0 = torch.randint(0, 2, (3, 1), generator=g).bool()
    n1 = 0.5
    return (a0, n1,)


FRESH_INPUTS = False
ITERS = 5
'''[1:]

BACKEND = 'inductor'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'aliasing-aliasing-shares_argument_shares_output_to_is_argument_is_output'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
