# pytest-cgraph entry
# signature: grad-grad-aot_eager
# base signature: grad-grad
# layer: aot_eager
# failure: grad difference at iteration 1, grad of a0
# first diverging layer: aot_eager (ladder eager -> aot_eager -> cudagraphs); CUDA-graph path specific: no
# backend: aot_eager; device: cpu; iterations: 5
# torch 2.13.0+cpu; no GPU used
# size: 0
# found by: buffer_clamp.py; replay: python -m pytest_cgraph.record buffer_clamp.py --backend aot_eager
# run: python THIS_FILE [--backend NAME] [--issue]  (exit 1 while the bug is there; needs pytest-cgraph); standalone copy: python -m pytest_cgraph.record --export THIS_FILE OUT.py

# The program, exactly as it ran (the oracle executes this text).
PROGRAM_SOURCE = r'''
# Counter module: forward does calls.add_(1) then returns x*w + calls; program clamps the output in place.
# a0=-2, iter 1: eager output 0 (unclamped) so a0.grad=0.5; aot_eager backward acts as if clamped -> a0.grad=0.
# i.e. the backward sees the buffer one step ahead; first diverging layer: aot_eager.
# Same class as the known "buffer increment then output mul_ -> gradient one larger" failure.
import torch


class Counter(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.full((1,), 0.5))
        self.register_buffer("calls", torch.zeros(()))

    def forward(self, x):
        self.calls.add_(1)
        return x * self.weight + self.calls


def program(a0, m1):
    v0 = m1(a0)
    v0.clamp_(max=0.5)
    return (v0,)


def inputs(k):
    return (torch.full((1,), -2.0, requires_grad=True), Counter())
'''[1:]

BACKEND = 'aot_eager'
BACKEND_MODULES = []  # imported first: they register the backend
DEVICE = 'cpu'
TIMEOUT = None  # seconds before a hang counts as reproduced (exit 1), or None
SIGNATURE = 'grad-grad'  # the failure this file reproduces


if __name__ == "__main__":
    from pytest_cgraph.repro import run_entry

    run_entry(__file__)
