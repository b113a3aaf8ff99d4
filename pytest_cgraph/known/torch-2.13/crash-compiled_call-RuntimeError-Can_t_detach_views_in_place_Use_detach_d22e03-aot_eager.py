# pytest-cgraph entry
# signature: crash-compiled_call-RuntimeError-Can_t_detach_views_in_place_Use_detach_d22e03-aot_eager
# base signature: crash-compiled_call-RuntimeError-Can_t_detach_views_in_place_Use_detach_d22e03
# layer: aot_eager
# failure: crash difference at iteration 1, compiled call: RuntimeError: Can't detach views in-place. Use detach() instead. If you are using DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set as True, gradients are views of DDP buckets, and hence detach_() cannot be called on these gradients. To fix this error, please refer to the Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution.
# first diverging layer: aot_eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: aot_eager; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: crash-compiled_call-RuntimeError-Can_t_detach_views_in_place_Use_detach_d22e03-aot_eager.py; replay: python -m pytest_cgraph.record crash-compiled_call-RuntimeError-Can_t_detach_views_in_place_Use_detach_d22e03-aot_eager.py --backend aot_eager
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# detach_() on an intermediate whose view is returned, beside a view of the
# input: under compile the intermediate is rebuilt as a view and detach_
# raises "Can't detach views in-place". Not found among torch's issues.
import torch


def program(a0):
    v0 = a0 @ a0.transpose(-1, -2)
    v1 = v0.select(1, 0)
    v2 = a0.as_strided((9,), (1,), a0.storage_offset())
    v0.detach_()
    return (v2, v1)


def inputs(k):
    return (torch.arange(9.0).reshape(1, 3, 3),)
'''[1:]

BACKEND = 'aot_eager'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'crash-compiled_call-RuntimeError-Can_t_detach_views_in_place_Use_detach_d22e03'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
