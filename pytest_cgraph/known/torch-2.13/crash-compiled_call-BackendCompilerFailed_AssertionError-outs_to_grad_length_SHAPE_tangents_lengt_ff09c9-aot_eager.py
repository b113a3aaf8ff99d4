# pytest-cgraph entry
# signature: crash-compiled_call-BackendCompilerFailed_AssertionError-outs_to_grad_length_SHAPE_tangents_lengt_ff09c9-aot_eager
# base signature: crash-compiled_call-BackendCompilerFailed_AssertionError-outs_to_grad_length_SHAPE_tangents_lengt_ff09c9
# layer: aot_eager
# failure: crash difference at iteration 1, compiled call: BackendCompilerFailed.AssertionError: outs_to_grad length (1) != tangents length (2)
# first diverging layer: aot_eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: cudagraphs; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: crash-compiled_call-BackendCompilerFailed_AssertionError-outs_to_grad_length_SHAPE_tangents_lengt_ff09c9-aot_eager.py; replay: python -m pytest_cgraph.record crash-compiled_call-BackendCompilerFailed_AssertionError-outs_to_grad_length_SHAPE_tangents_lengt_ff09c9-aot_eager.py --backend cudagraphs
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# Two aliasing non-leaf inputs that require grad (v0 and its view v1, handed over a graph break)
# are both mutated in place by the second Dynamo graph.
# Eager: fine, returns p1 + 5 with a grad_fn.
# Compiled (aot_eager and up): AOTAutograd joint tracing fails with
# "AssertionError: outs_to_grad length (1) != tangents length (2)" -> BackendCompilerFailed.
# First diverging layer: aot_eager (eager/Dynamo-only agrees).
import torch


def program(p1):
    v0 = p1 + 2
    v1 = v0.view(-1)
    torch._dynamo.graph_break()
    v1.add_(1)
    v0.add_(2)
    return (v0,)


def inputs(k):
    return (torch.nn.Parameter(torch.ones(1)),)
'''[1:]

BACKEND = 'cudagraphs'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'crash-compiled_call-BackendCompilerFailed_AssertionError-outs_to_grad_length_SHAPE_tangents_lengt_ff09c9'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
