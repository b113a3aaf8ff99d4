# pytest-cgraph entry
# signature: crash-compiled_backward-RuntimeError-Trying_to_backward_through_the_graph_4ac5e3-aot_eager
# base signature: crash-compiled_backward-RuntimeError-Trying_to_backward_through_the_graph_4ac5e3
# layer: aot_eager
# failure: crash difference at iteration 2, compiled backward: RuntimeError: Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you need to access saved tensors after calling backward.
# first diverging layer: aot_eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: aot_eager; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: crash-compiled_backward-RuntimeError-Trying_to_backward_through_the_graph_4ac5e3-aot_eager.py; replay: python -m pytest_cgraph.record crash-compiled_backward-RuntimeError-Trying_to_backward_through_the_graph_4ac5e3-aot_eager.py --backend aot_eager
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# family: autograd · schedule: persistent · iterations: 5
import torch


def program(a0, a1):
    a1.add_(a0)
    return (a1,)


def inputs(k):
    g = torch.Generator().manual_seed(1000)
    a0 = torch.randn((1,), generator=g)
    a0.requires_grad_(True)
    a1 = torch.randn((1,), generator=g)
    return (a0, a1,)


FRESH_INPUTS = False
ITERS = 5
'''[1:]

BACKEND = 'aot_eager'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'crash-compiled_backward-RuntimeError-Trying_to_backward_through_the_graph_4ac5e3'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
