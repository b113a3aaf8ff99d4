"""The scenarios of PyTorch's ``test/dynamo/test_cudagraphs.py``, as equivalence checks.

Each runs 5 iterations (call 1 warms up, 2 records, 3-5 replay) with
backward where the original scenario has it, against the session's backend
(``--cgraph-backend``, default ``cudagraphs``) and device (``--cgraph-device``).
On a CPU-only machine, the ``cudagraphs`` backend runs AOTAutograd and its
skip checks, then skips capture; the report says so.
"""

from __future__ import annotations

import torch


def test_basic(cgraph):
    def model(x, y):
        return (x + y) * y

    report = cgraph.check(model, torch.randn(3, requires_grad=True), torch.randn(3))
    assert report.iterations == 5


def test_dtoh(cgraph):
    # Device to host inside the program. Checked for real on CUDA; on a
    # CPU-only run ``.cpu()`` returns its input itself and this is trivial.
    def model(x, y):
        a = x + y
        return a.cpu() * 3

    cgraph.check(model, torch.randn(3, requires_grad=True), torch.randn(3))


def test_htod(cgraph):
    # A 0-dim CPU tensor (a host scalar) combined with device tensors. The
    # harness keeps 0-dim CPU arguments on the host when moving to CUDA; on
    # a CPU-only run everything is on the host and this is trivial.
    def model(x, y):
        a = x + y
        return a * 3

    cgraph.check(model, torch.randn(3, requires_grad=True), torch.randn(()))


def test_mutate_input(cgraph):
    def model(x, y):
        y.add_(3)
        return x * y

    # y is reused across iterations, so its value grows by 3 per call on
    # both sides; the oracle compares y after every call.
    cgraph.check(model, torch.randn(3, requires_grad=True), torch.randn(3))


def test_mutate_constant(cgraph):
    def model(x, y):
        c = torch.tensor(1)
        c.add_(2)
        return x * y * 0 + c

    cgraph.check(model, torch.randn(1, requires_grad=True), torch.randn(1))


def test_factory(cgraph):
    def model(y):
        x = torch.zeros(3, device=y.device)
        x.add_(3)
        return x * y

    cgraph.check(model, torch.randn(3, requires_grad=True))


def test_mutated_metadata(cgraph):
    def model(x):
        x = x.clone()
        x.resize_(20)
        x.fill_(2)
        return x

    cgraph.check(model, torch.empty(0))


def test_dead_fill(cgraph):
    def model(x):
        x = x.clone()
        y = x[0:0]
        x.fill_(2)
        y.fill_(3)
        return x, y

    cgraph.check(model, torch.empty(20))
