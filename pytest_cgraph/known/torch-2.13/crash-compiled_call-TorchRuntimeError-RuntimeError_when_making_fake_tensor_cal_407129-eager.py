# pytest-cgraph entry
# signature: crash-compiled_call-TorchRuntimeError-RuntimeError_when_making_fake_tensor_cal_407129-eager
# base signature: crash-compiled_call-TorchRuntimeError-RuntimeError_when_making_fake_tensor_cal_407129
# layer: eager
# failure: crash difference at iteration 1, compiled call: TorchRuntimeError: RuntimeError when making fake tensor call: RuntimeError: expand: attempting to expand a dimension of length 2 -> 1!
# first diverging layer: eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: cudagraphs; device: cpu; iterations: 1
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: stale_shape_after_inplace_t.py; replay: python -m pytest_cgraph.record stale_shape_after_inplace_t.py --backend cudagraphs
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
import torch


# Tensor.t_() on a (non-input) tensor, then reading its .shape. Eager: .shape is the new
# (2, 1). Dynamo (every backend, even "eager") keeps the cached pre-t_() shape (1, 2), so
# expand() to it fails at trace time: TorchRuntimeError "expand: attempting to expand a
# dimension of length 2 -> 1!". Without a shape-checking op the stale .shape is silently wrong.
def program(a0):
    v0 = a0 + 0
    v0.t_()
    return (v0.expand(v0.shape),)


def inputs(k):
    a0 = torch.randn((1, 2))
    return (a0,)


FRESH_INPUTS = False
ITERS = 1
'''[1:]

BACKEND = 'cudagraphs'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'crash-compiled_call-TorchRuntimeError-RuntimeError_when_making_fake_tensor_cal_407129'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
