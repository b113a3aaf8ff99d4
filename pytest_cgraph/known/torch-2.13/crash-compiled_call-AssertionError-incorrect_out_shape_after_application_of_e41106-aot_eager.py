# pytest-cgraph entry
# signature: crash-compiled_call-AssertionError-incorrect_out_shape_after_application_of_e41106-aot_eager
# base signature: crash-compiled_call-AssertionError-incorrect_out_shape_after_application_of_e41106
# layer: aot_eager
# failure: crash difference at iteration 1, compiled call: AssertionError: incorrect out shape after application of ViewMeta sequence: (1,) (actual) vs (2,) (expected)
# first diverging layer: aot_eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: aot_eager; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: crash-compiled_call-AssertionError-incorrect_out_shape_after_application_of_e41106-aot_eager.py; replay: python -m pytest_cgraph.record crash-compiled_call-AssertionError-incorrect_out_shape_after_application_of_e41106-aot_eager.py --backend aot_eager
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# family: mutation · schedule: persistent · iterations: 5
import torch


def program(a0):
    v0 = a0.as_strided((1,), (1,), a0.storage_offset())
    v0.add_(2)
    v1 = a0.view(-1)
    return (v1,)


def inputs(k):
    g = torch.Generator().manual_seed(1000)
    a0 = torch.randn((1,), generator=g).expand(2)
    return (a0,)


FRESH_INPUTS = False
ITERS = 5
'''[1:]

BACKEND = 'aot_eager'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'crash-compiled_call-AssertionError-incorrect_out_shape_after_application_of_e41106'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
