# pytest-cgraph entry
# signature: crash-compiled_backward-TypeError-unsupported_operand_type_s_for_Q_15d376-aot_eager
# base signature: crash-compiled_backward-TypeError-unsupported_operand_type_s_for_Q_15d376
# layer: aot_eager
# failure: crash difference at iteration 1, compiled backward: TypeError: unsupported operand type(s) for *: 'NoneType' and 'int'
# first diverging layer: aot_eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: cudagraphs; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: crash-compiled_backward-TypeError-unsupported_operand_type_s_for_Q_15d376-aot_eager.py; replay: python -m pytest_cgraph.record crash-compiled_backward-TypeError-unsupported_operand_type_s_for_Q_15d376-aot_eager.py --backend cudagraphs
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# A gradient hook on an intermediate that is not on the output's backward
# path: eager never calls it; the compiled backward calls it with None
# (the lambda then raises TypeError). Found at iteration 1; the input
# detached in place makes eager's own iteration 2 invalid.
import torch


def program(a0):
    v0 = a0 + 2
    v1 = v0.clone()
    a0.detach_()
    a0.add_(2)
    v1.register_hook(lambda grad: grad * 2)
    return (v0,)


def inputs(k):
    return (torch.ones(1, requires_grad=True),)
'''[1:]

BACKEND = 'cudagraphs'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'crash-compiled_backward-TypeError-unsupported_operand_type_s_for_Q_15d376'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
