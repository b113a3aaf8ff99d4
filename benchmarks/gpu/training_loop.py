"""The examples' training steps as a user's own loop, in plain torch, on CUDA.

    python benchmarks/gpu/training_loop.py [--iters 5]

Tells whether a failure the check reports for ``examples/test_training_steps.py``
on a CUDA-graph backend is met by the same step in a plain loop, without the
check around it: each step is compiled whole (forward, backward, optimizer
step) and run ``--iters`` times beside an eager twin, with and without
``torch.compiler.cudagraph_mark_step_begin()`` before each call. One line per
run: ``ok``, ``differs`` (largest difference of loss, weights or grads) or
the error's first line.
"""

from __future__ import annotations

import argparse
import copy
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

# The examples' own model: the steps below are theirs, run as a plain loop.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from test_training_steps import TinyNet

Step = Callable[[nn.Module, Any, torch.Tensor, torch.Tensor], torch.Tensor]


def sgd_step(model: nn.Module, opt: Any, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    return loss.detach()


def adam_made_inside(model: nn.Module, opt: Any, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    # examples' test_adam_step_returns_the_loss_and_a_weight: a fresh Adam
    # each call, no zero_grad (grads accumulate across calls)
    adam = torch.optim.Adam(model.parameters(), lr=1e-2)
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    adam.step()
    return loss.detach()


def backward_only_accumulating(
    model: nn.Module, opt: Any, x: torch.Tensor, y: torch.Tensor
) -> torch.Tensor:
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    return loss.detach()


CASES: dict[str, tuple[Step, Callable[[nn.Module], torch.optim.Optimizer | None]]] = {
    "sgd-momentum, zero_grad first": (
        sgd_step,
        lambda m: torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9),
    ),
    "sgd-plain, zero_grad first": (sgd_step, lambda m: torch.optim.SGD(m.parameters(), lr=0.1)),
    "adam made inside, grads accumulate": (adam_made_inside, lambda m: None),
    "backward only, grads accumulate": (backward_only_accumulating, lambda m: None),
}


def compiled(step: Step, backend: str) -> Step:
    if backend == "reduce-overhead":
        return torch.compile(step, mode="reduce-overhead")
    return torch.compile(step, backend=backend)


def run(name: str, backend: str, mark: bool, iters: int, device: str) -> str:
    step, make_opt = CASES[name]
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = TinyNet().to(device)
    twin = copy.deepcopy(model)
    opt, twin_opt = make_opt(model), make_opt(twin)
    g = torch.Generator().manual_seed(1)
    x, y = (torch.randn(6, 4, generator=g).to(device), torch.randn(6, 1, generator=g).to(device))
    fn = compiled(step, backend)
    worst = 0.0
    for k in range(iters):
        if mark:
            torch.compiler.cudagraph_mark_step_begin()
        try:
            loss = fn(model, opt, x, y).clone()
            weights = [p.detach().clone() for p in model.parameters()]
            grads = [p.grad.clone() for p in model.parameters() if p.grad is not None]
        except Exception as error:  # the finding itself: reported, not raised
            first = str(error).strip().splitlines()[0][:110]
            return f"call {k + 1}: {type(error).__name__}: {first}"
        expected = step(twin, twin_opt, x, y)
        if device == "cuda":
            torch.cuda.synchronize()
        twin_grads = [p.grad for p in twin.parameters() if p.grad is not None]
        if len(grads) != len(twin_grads):
            return f"call {k + 1}: {len(grads)} grads where eager has {len(twin_grads)}"
        pairs = [
            (loss, expected),
            *zip(weights, twin.parameters(), strict=True),
            *zip(grads, twin_grads, strict=True),
        ]
        worst = max(worst, *((a - b.detach()).abs().max().item() for a, b in pairs))
    return "ok" if worst <= 1e-4 else f"differs (largest difference {worst:.3g})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iters", type=int, default=5)
    parser.add_argument(
        "--backend",
        action="append",
        dest="backends",
        help="a backend to compile with (repeatable; cudagraphs and reduce-overhead)",
    )
    parser.add_argument("--device", default="cuda", help="cpu: a rehearsal (nothing captured)")
    args = parser.parse_args()
    where = torch.cuda.get_device_name() if args.device == "cuda" else "CPU"
    print(f"torch {torch.__version__}, {where}")
    for backend in args.backends or ("cudagraphs", "reduce-overhead"):
        for name in CASES:
            for mark in (False, True):
                label = f"{backend:15} {name:36} mark_step={'yes' if mark else 'no '}"
                print(f"{label}  {run(name, backend, mark, args.iters, args.device)}", flush=True)


if __name__ == "__main__":
    main()
