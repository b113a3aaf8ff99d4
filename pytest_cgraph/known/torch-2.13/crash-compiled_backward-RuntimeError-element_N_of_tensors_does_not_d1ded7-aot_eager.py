# pytest-cgraph entry
# signature: crash-compiled_backward-RuntimeError-element_N_of_tensors_does_not_d1ded7-aot_eager
# base signature: crash-compiled_backward-RuntimeError-element_N_of_tensors_does_not_d1ded7
# layer: aot_eager
# failure: crash difference at iteration 1, compiled backward: RuntimeError: element 0 of tensors does not require grad and does not have a grad_fn
# first diverging layer: aot_eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: aot_eager; device: cpu; iterations: 2
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: inference_enable_grad.py; replay: python -m pytest_cgraph.record inference_enable_grad.py --backend aot_eager
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
import torch


# enable_grad inside an ambient inference_mode: eager's result does not
# require grad (inference mode records nothing, whatever the grad mode);
# the aot_eager-compiled result requires grad (AOTAutograd traces a
# training graph when an input requires grad and grad is enabled in the
# region). Plain torch.compile(backend="aot_eager") shows it too.
def program(a0):
    with torch.enable_grad():
        v0 = a0 * 2
    return (v0,)


def inputs(k):
    return (torch.ones(3, requires_grad=True),)


GRAD_MODE = "inference_mode"
ITERS = 2
'''[1:]

BACKEND = 'aot_eager'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'crash-compiled_backward-RuntimeError-element_N_of_tensors_does_not_d1ded7'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
