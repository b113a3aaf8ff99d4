# pytest-cgraph entry
# signature: crash-compiled_call-InternalTorchDynamoError-RuntimeError_Tensor_must_have_a_last_549d33-eager
# base signature: crash-compiled_call-InternalTorchDynamoError-RuntimeError_Tensor_must_have_a_last_549d33
# layer: eager
# failure: crash difference at iteration 1, compiled call: InternalTorchDynamoError: RuntimeError: Tensor must have a last dimension of size 2
# first diverging layer: eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: cudagraphs; device: cpu; iterations: 1
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: view_as_complex_input_fakeify.py; replay: python -m pytest_cgraph.record view_as_complex_input_fakeify.py --backend cudagraphs
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
import torch


def stage0(v0):
    return (v0 * 2,)


# A compiled function receives v0 = view_as_complex(a0.view(2, 2)), a complex view of a
# real view. Eager: fine. Dynamo (every backend, even "eager"), while making the fake copy
# of the input, calls view_as_complex on the view's *base* (a0, shape (4,)) instead of its
# parent and raises InternalTorchDynamoError: "Tensor must have a last dimension of size 2"
# (torch/_subclasses/meta_utils.py, the dtype-changing-view branch).
def program(a0):
    v0 = torch.view_as_complex(a0.view(2, 2))
    return stage0(v0)


def inputs(k):
    a0 = torch.randn(4)
    return (a0,)


FRESH_INPUTS = False
ITERS = 1
COMPILE = ('stage0',)
'''[1:]

BACKEND = 'cudagraphs'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'crash-compiled_call-InternalTorchDynamoError-RuntimeError_Tensor_must_have_a_last_549d33'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
