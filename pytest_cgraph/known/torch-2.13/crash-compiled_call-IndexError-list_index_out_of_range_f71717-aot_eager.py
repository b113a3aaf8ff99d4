# pytest-cgraph entry
# signature: crash-compiled_call-IndexError-list_index_out_of_range_f71717-aot_eager
# base signature: crash-compiled_call-IndexError-list_index_out_of_range_f71717
# layer: aot_eager
# failure: crash difference at iteration 1, compiled call: IndexError: list index out of range
# first diverging layer: aot_eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: aot_eager; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: crash-compiled_call-IndexError-list_index_out_of_range_f71717-aot_eager.py; replay: python -m pytest_cgraph.record crash-compiled_call-IndexError-list_index_out_of_range_f71717-aot_eager.py --backend aot_eager
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# Under compiled autograd, a hook on an intermediate, a backward with
# retain_graph=True, then torch.autograd.grad over the same graph: the
# compiled backward raises IndexError (list index out of range). Eager runs
# it. Related (closed): pytorch/pytorch#136193.
import torch


def program(a0):
    v0 = a0 * 1
    v0.register_hook(lambda grad: grad * 2)
    v0.sum().backward(retain_graph=True)
    v1 = torch.autograd.grad(v0.sum(), a0, retain_graph=True)[0]
    return (v1,)


def inputs(k):
    return (torch.ones(1, requires_grad=True),)


COMPILED_AUTOGRAD = True
'''[1:]

BACKEND = 'aot_eager'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'crash-compiled_call-IndexError-list_index_out_of_range_f71717'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
