# pytest-cgraph entry
# signature: grad-grad-presence-aot_eager
# base signature: grad-grad-presence
# layer: aot_eager
# failure: grad difference at iteration 1, grad of p1
# first diverging layer: aot_eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: cudagraphs; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: grad-grad-presence-aot_eager-2.py; replay: python -m pytest_cgraph.record grad-grad-presence-aot_eager-2.py --backend cudagraphs
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# sin(p1) of a Parameter, a graph break, then an in-place add_ on that intermediate; output a0 + 2 ignores p1.
# (The fuzzed program broke the graph with a1.unsqueeze_(0): "inplace view on a graph input is not supported".)
# Eager: p1 is not in the output's autograd graph, so after backward p1.grad is None.
# Compiled: v0 is an input of the 2nd graph that it mutates; AOTAutograd's backward for that graph returns the
# zero tangent of the mutated input, which flows through SinBackward -> p1.grad = tensor([0.]). First layer: aot_eager.
# Related: pytorch/torchdynamo#1102 (eager None grads vs aot zero grads across a graph break).
import torch


def program(a0, p1):
    v0 = torch.sin(p1)
    torch._dynamo.graph_break()
    v0.add_(1)
    return (a0 + 2,)


def inputs(k):
    return (torch.ones(1, requires_grad=True), torch.nn.Parameter(torch.ones(1)))
'''[1:]

BACKEND = 'cudagraphs'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'grad-grad-presence'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
