# pytest-cgraph entry
# signature: crash-compiled_call-InternalTorchDynamoError-RuntimeError_A_view_was_created_in_6f4b98-eager
# base signature: crash-compiled_call-InternalTorchDynamoError-RuntimeError_A_view_was_created_in_6f4b98
# layer: eager
# failure: crash difference at iteration 1, compiled call: InternalTorchDynamoError: RuntimeError: A view was created in no_grad mode and its base or another view of its base has been modified inplace with grad mode enabled. Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both the view and the inplace either both inside the no_grad block (if you don't want the inplace to be tracked) or both outside (if you want the inplace to be tracked).
# first diverging layer: eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: aot_eager; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: nograd_view_fakify.py; replay: python -m pytest_cgraph.record nograd_view_fakify.py --backend aot_eager
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
import torch


# Under no_grad: v0 = a0.view(-1) of a leaf that requires grad, then a0.unsqueeze_(0); v0 used afterwards.
# Eager: fine (nothing reads v0's grad_fn under no_grad), returns tensor([1.]).
# Compiled (any backend, even "eager"): unsqueeze_ on the input breaks the graph; fakifying v0 for the
# resume frame (fake_tensor.from_real_tensor) regenerates its grad_fn with grad mode on and raises
# InternalTorchDynamoError "A view was created in no_grad mode ... modified inplace with grad mode enabled".
# Related (closed, same error family via fake tensors): pytorch/pytorch#103153, #88205.
def program(a0):
    v0 = a0.view(-1)
    a0.unsqueeze_(0)
    return (v0 * 1,)


def inputs(k):
    return (torch.ones(1, requires_grad=True),)


GRAD_MODE = 'no_grad'
'''[1:]

BACKEND = 'aot_eager'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'crash-compiled_call-InternalTorchDynamoError-RuntimeError_A_view_was_created_in_6f4b98'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
