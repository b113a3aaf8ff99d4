# pytest-cgraph entry
# signature: crash-compiled_call-TorchRuntimeError-RuntimeError_when_making_fake_tensor_cal_e67e2a-inductor
# base signature: crash-compiled_call-TorchRuntimeError-RuntimeError_when_making_fake_tensor_cal_e67e2a
# layer: inductor
# failure: crash difference at iteration 1, compiled call: TorchRuntimeError: RuntimeError when making fake tensor call: RuntimeError: a leaf Variable that requires grad is being used in an in-place operation.
# first diverging layer: inductor (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: inductor; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: crash-compiled_call-TorchRuntimeError-RuntimeError_when_making_fake_tensor_cal_e67e2a-inductor.py; replay: python -m pytest_cgraph.record crash-compiled_call-TorchRuntimeError-RuntimeError_when_making_fake_tensor_cal_e67e2a-inductor.py --backend inductor
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# torch.autograd.grad on a detached alias made to require grad splits the
# program (a graph break). With Inductor compiling the first graph (not with
# aot_eager), the resumed graph sees the intermediate v0 as a leaf that
# requires grad, and its mul_ fails while tracing ("a leaf Variable that
# requires grad is being used in an in-place operation"): eager runs.
import torch


def program(a0):
    v0 = torch.sin(a0)
    v2 = v0.detach().requires_grad_()
    v3 = torch.autograd.grad(v2.sum(), v2)[0]
    v0.mul_(3)
    return (v0,)


def inputs(k):
    return (torch.ones(1, 1).expand(3, 1),)
'''[1:]

BACKEND = 'inductor'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'crash-compiled_call-TorchRuntimeError-RuntimeError_when_making_fake_tensor_cal_e67e2a'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
