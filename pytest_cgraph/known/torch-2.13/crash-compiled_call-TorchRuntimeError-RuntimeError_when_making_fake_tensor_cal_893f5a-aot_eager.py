# pytest-cgraph entry
# signature: crash-compiled_call-TorchRuntimeError-RuntimeError_when_making_fake_tensor_cal_893f5a-aot_eager
# base signature: crash-compiled_call-TorchRuntimeError-RuntimeError_when_making_fake_tensor_cal_893f5a
# layer: aot_eager
# failure: crash difference at iteration 1, compiled call: TorchRuntimeError: RuntimeError when making fake tensor call: RuntimeError: Output 0 of AsStrided is a view and is being modified inplace. This view was created inside a custom Function (or because an input was returned as-is) and the autograd logic to handle view+inplace would override the custom backward associated with the custom Function, leading to incorrect gradients. This behavior is forbidden. You can fix this by cloning the output of the custom Function.
# first diverging layer: aot_eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: aot_eager; device: cpu; iterations: 1
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: metadata_mutated_output_inplace.py; replay: python -m pytest_cgraph.record metadata_mutated_output_inplace.py --backend aot_eager
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
import torch


# Eager: v0 = p1 * 2 is a plain non-view tensor; unsqueeze_ changes its metadata,
# and a later in-place add_ is fine.
# Compiled (aot_eager): graph 1 returns v0 regenerated as an as_strided view of a
# CompiledFunction (custom autograd.Function) output, so add_ in graph 2 is rejected:
# "Output 0 of AsStrided is a view ... created inside a custom Function ...".
def program(p1):
    v0 = p1 * 2
    v0.unsqueeze_(0)
    torch._dynamo.graph_break()
    v0.add_(1)
    return (v0,)


def inputs(k):
    return (torch.randn((2,), requires_grad=True),)


FRESH_INPUTS = False
ITERS = 1
'''[1:]

BACKEND = 'aot_eager'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'crash-compiled_call-TorchRuntimeError-RuntimeError_when_making_fake_tensor_cal_893f5a'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
