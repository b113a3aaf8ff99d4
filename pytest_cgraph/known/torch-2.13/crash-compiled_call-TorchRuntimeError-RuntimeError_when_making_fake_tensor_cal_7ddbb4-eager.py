# pytest-cgraph entry
# signature: crash-compiled_call-TorchRuntimeError-RuntimeError_when_making_fake_tensor_cal_7ddbb4-eager
# base signature: crash-compiled_call-TorchRuntimeError-RuntimeError_when_making_fake_tensor_cal_7ddbb4
# layer: eager
# failure: crash difference at iteration 1, compiled call: TorchRuntimeError: RuntimeError when making fake tensor call: RuntimeError: more than one element of the written-to tensor refers to a single memory location
# first diverging layer: eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: cudagraphs; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: self_copy_overlap.py; replay: python -m pytest_cgraph.record self_copy_overlap.py --backend cudagraphs
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# In-place self-copy x.copy_(x) of an input with internal overlap (an expand()ed tensor, stride 0).
# Eager: copy_ short-circuits when self is src (aten copy_impl: self.is_same(src)), so nothing happens, no error.
# Compiled: Dynamo's fake-tensor propagation runs under the Python dispatcher, where meta_copy_ (_meta_registrations.py)
# checks _debug_has_internal_overlap(self) unconditionally -> TorchRuntimeError "more than one element of the written-to
# tensor refers to a single memory location". First diverging layer: eager (Dynamo). (Original reached this via s1.set_(a0).)
# Related: pytorch/pytorch#108989 (added the overlap check to meta_copy_), #89301.
import torch


def program(a0):
    a0.copy_(a0)
    return (a0.clone(),)


def inputs(k):
    return (torch.ones(1).expand(3),)
'''[1:]

BACKEND = 'cudagraphs'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'crash-compiled_call-TorchRuntimeError-RuntimeError_when_making_fake_tensor_cal_7ddbb4'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
