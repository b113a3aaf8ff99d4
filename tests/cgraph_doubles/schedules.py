"""A learning-rate schedule whose writes the compiled side loses: a fault on one side.

A compiler that traces ``scheduler.step()`` must replay its write to the
optimizer's ``param_groups``; one that drops it leaves the compiled side's
learning rate where it was. :class:`ScheduleLostWhenCompiled` is that fault,
injected on the compiled side alone (the step returns at once while Dynamo
traces it), so a check can be shown to catch a lost schedule.

The plugin's tests of training steps (marked tests, the ``cgraph`` fixture)
run an inner pytest with the options here, :data:`CHECKED_WITHOUT_CAMPAIGN`.
"""

from __future__ import annotations

import torch


class ScheduleLostWhenCompiled(torch.optim.lr_scheduler.StepLR):
    """A ``StepLR`` whose step is dropped when compiled: eager's schedule advances,
    the compiled side's learning rate stays where it was."""

    def step(self, epoch: int | None = None) -> None:
        if torch.compiler.is_compiling():
            return
        super().step(epoch)


def training(lr: float = 0.1, seed: int = 0) -> tuple[torch.nn.Linear, torch.optim.SGD]:
    """A small model and an SGD optimizer over it, the same for every seed."""
    torch.manual_seed(seed)
    net = torch.nn.Linear(2, 1)
    return net, torch.optim.SGD(net.parameters(), lr=lr)


#: ``--cgraph`` with the campaign cut to one deselected item: only the inner
#: file's marked tests (and fixture checks) run.
CHECKED_WITHOUT_CAMPAIGN = (
    "--cgraph",
    "--cgraph-families=views",
    "--cgraph-examples=1",
    "-p",
    "no:cacheprovider",
    "-k",
    "not views",
)
