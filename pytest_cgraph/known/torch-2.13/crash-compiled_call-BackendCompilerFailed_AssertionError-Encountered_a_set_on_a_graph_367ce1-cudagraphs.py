# pytest-cgraph entry
# signature: crash-compiled_call-BackendCompilerFailed_AssertionError-Encountered_a_set_on_a_graph_367ce1-cudagraphs
# base signature: crash-compiled_call-BackendCompilerFailed_AssertionError-Encountered_a_set_on_a_graph_367ce1
# layer: cudagraphs
# failure: crash difference at iteration 1, compiled call: BackendCompilerFailed.AssertionError: Encountered a set_ on a graph input, but the input has other mutations that we cannot
# first diverging layer: cudagraphs (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: yes
# backend: cudagraphs; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: crash-compiled_call-BackendCompilerFailed_AssertionError-Encountered_a_set_on_a_graph_367ce1-cudagraphs.py; replay: python -m pytest_cgraph.record crash-compiled_call-BackendCompilerFailed_AssertionError-Encountered_a_set_on_a_graph_367ce1-cudagraphs.py --backend cudagraphs
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# `a0.data = a0.data * 2` on a plain float input (Dynamo traces the .data swap as set_ on a graph input).
# Eager: works (a0 doubles each call). aot_eager: works, same values.
# cudagraphs backend: BackendCompilerFailed AssertionError "Encountered a set_ on a graph input ..." on the first
# call, because it runs AOTAutograd with keep_inference_input_mutations=False
# (torch._dynamo.config.cudagraph_backend_keep_input_mutation), and a set_ mutation must be kept in-graph.
# First diverging layer: cudagraphs.
import torch


def program(a0):
    a0.data = a0.data * 2
    return (a0,)


def inputs(k):
    return (torch.ones(1),)
'''[1:]

BACKEND = 'cudagraphs'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'crash-compiled_call-BackendCompilerFailed_AssertionError-Encountered_a_set_on_a_graph_367ce1'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
