# pytest-cgraph entry
# signature: crash-compiled_call-RuntimeError-Output_N_of_CompiledFunction_is_a_1bb138-cudagraphs
# base signature: crash-compiled_call-RuntimeError-Output_N_of_CompiledFunction_is_a_1bb138
# layer: cudagraphs
# failure: crash difference at iteration 1, compiled call: RuntimeError: Output 1 of CompiledFunction is a view and is being modified inplace. This view is the output of a function that returns multiple views. Such functions do not allow the output views to be modified inplace. You should replace the inplace operation by an out-of-place one.
# first diverging layer: cudagraphs (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: yes
# backend: cudagraphs; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: split_view_custom_mutation.py; replay: python -m pytest_cgraph.record split_view_custom_mutation.py --backend cudagraphs
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# Graph 1 returns relu(a0), a0.split(1)[0]; after a graph break a mutates_args custom op writes into that split view of
# the requires-grad leaf a0. Eager: custom op's autograd fallback does no view/in-place checks; runs fine (a0 becomes 2).
# Compiled (cudagraphs): AOT sees an inference graph; cudagraph_backend_keep_input_mutation=False, so the mutation
# is written back in the runtime epilogue via copy_ -> "Output 1 of CompiledFunction is a view and is being modified
# inplace ... returns multiple views". aot_eager keeps the mutation in-graph (keep_inference_input_mutations=True) and passes.
# Related: PR pytorch/pytorch#194534 (mutation epilogue tripping autograd view+inplace checks).
import torch


if not hasattr(torch.ops.cgraph, "add_one_"):

    @torch.library.custom_op("cgraph::add_one_", mutates_args=("x",))
    def _cgraph_add_one_(x: torch.Tensor) -> None:
        x.add_(1)

    @_cgraph_add_one_.register_fake
    def _(x):
        return None


def program(a0):
    v0 = torch.relu(a0)
    v1 = a0.split(1)[0]
    torch._dynamo.graph_break()
    torch.ops.cgraph.add_one_(v1)
    return (v0,)


def inputs(k):
    return (torch.ones(1, requires_grad=True),)
'''[1:]

BACKEND = 'cudagraphs'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'crash-compiled_call-RuntimeError-Output_N_of_CompiledFunction_is_a_1bb138'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
