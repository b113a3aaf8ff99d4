# pytest-cgraph entry
# signature: crash-compiled_call-RuntimeError-a_view_of_a_leaf_Variable_aa3a66-cudagraphs
# base signature: crash-compiled_call-RuntimeError-a_view_of_a_leaf_Variable_aa3a66
# layer: cudagraphs
# failure: crash difference at iteration 1, compiled call: RuntimeError: a view of a leaf Variable that requires grad is being used in an in-place operation.
# first diverging layer: cudagraphs (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: yes
# backend: cudagraphs; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: crash-compiled_call-RuntimeError-a_view_of_a_leaf_Variable_aa3a66-cudagraphs.py; replay: python -m pytest_cgraph.record crash-compiled_call-RuntimeError-a_view_of_a_leaf_Variable_aa3a66-cudagraphs.py --backend cudagraphs
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# A custom op (mutates_args=("x",)) adds 1 in place to a view of a leaf that requires grad.
# Eager: allowed silently (no autograd check on the custom op); aot_eager: also fine (mutation kept in graph).
# cudagraphs backend (keep_inference_input_mutations=False): the mutation is applied in the AOTAutograd
# runtime epilogue via copy_ on the input -> RuntimeError "a view of a leaf Variable that requires grad
# is being used in an in-place operation." First diverging layer: cudagraphs.
import torch

if not hasattr(torch.ops.cgraph, "add_one_"):

    @torch.library.custom_op("cgraph::add_one_", mutates_args=("x",))
    def _cgraph_add_one_(x: torch.Tensor) -> None:
        x.add_(1)

    @_cgraph_add_one_.register_fake
    def _(x):
        return None


def program(a0):
    torch.ops.cgraph.add_one_(a0)
    return (a0 * 1,)


def inputs(k):
    return (torch.ones(1, requires_grad=True).view(1),)
'''[1:]

BACKEND = 'cudagraphs'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'crash-compiled_call-RuntimeError-a_view_of_a_leaf_Variable_aa3a66'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
