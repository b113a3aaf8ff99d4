# pytest-cgraph entry
# signature: crash-compiled_call-RuntimeError-expand_torch_FloatTensor_SHAPE_size_SHAP_eb6cc4-aot_eager
# base signature: crash-compiled_call-RuntimeError-expand_torch_FloatTensor_SHAPE_size_SHAP_eb6cc4
# layer: aot_eager
# failure: crash difference at iteration 1, compiled call: RuntimeError: expand(torch.FloatTensor{[1, 1]}, size=[2]): the number of sizes provided (1) must be greater or equal to the number of dimensions in the tensor (2)
# first diverging layer: aot_eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: aot_eager; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: base_view_expand.py; replay: python -m pytest_cgraph.record base_view_expand.py --backend aot_eager
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# Input a1 is a 1-D view of 2-D input a0; program mutates a0 in place, then returns a1.expand(2).
# Eager: returns a (2,) tensor. Compiled (aot_eager): output-alias regeneration replays the
# view chain from the base with wrong rank -> RuntimeError "expand(torch.FloatTensor{[1, 1]}, size=[2])".
# First diverging layer: AOTAutograd runtime wrapper (functionalization ViewMeta replay of output alias of a mutated input's view).
# Sibling: returning a1.unsqueeze(0) instead gives "incorrect out shape after application of ViewMeta sequence".
import torch


def program(a0, a1):
    a0.add_(1)
    return (a1.expand(2),)


def inputs(k):
    a0 = torch.ones((1, 1))
    return (a0, a0.view(1))
'''[1:]

BACKEND = 'aot_eager'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'crash-compiled_call-RuntimeError-expand_torch_FloatTensor_SHAPE_size_SHAP_eb6cc4'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
