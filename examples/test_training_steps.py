"""Training steps as model authors write them, marked to be checked under ``--cgraph``.

Each test runs its own ``loss.backward()`` and optimizer step and returns
what a person would look at: the loss (undetached, its graph already
freed), the parameters after the step, a gradient norm. The check then
compares those, the module's parameters and buffers, the optimizer's state
and the gradients the step produced — and adds no backward of its own,
since the program already ran one.

On a correct compiler every test passes; a backend that loses the
parameter updates fails the ones that step an optimizer.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn


class TinyNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin1 = nn.Linear(4, 8)
        self.norm = nn.BatchNorm1d(8)
        self.lin2 = nn.Linear(8, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin2(torch.relu(self.norm(self.lin1(x))))


class DropoutNet(TinyNet):
    """The same layers with a dropout before the last one."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden = torch.relu(self.norm(self.lin1(x)))
        return self.lin2(nn.functional.dropout(hidden, 0.2, training=self.training))


@pytest.fixture
def model():
    torch.manual_seed(0)
    return TinyNet()


@pytest.fixture
def batch():
    g = torch.Generator().manual_seed(1)
    return torch.randn(6, 4, generator=g), torch.randn(6, 1, generator=g)


@pytest.fixture
def sgd(model):
    return torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


@pytest.mark.cgraph_equivalent
def test_sgd_step_returns_the_loss(model, sgd, batch):
    x, y = batch
    sgd.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    sgd.step()
    return loss


@pytest.mark.cgraph_equivalent
@pytest.mark.parametrize("optimizer", ["adam", "adamw"])
def test_adam_step_returns_the_loss_and_a_weight(model, batch, optimizer):
    x, y = batch
    kind = torch.optim.Adam if optimizer == "adam" else torch.optim.AdamW
    opt = kind(model.parameters(), lr=1e-2)
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    return loss, model.lin1.weight


@pytest.mark.cgraph_equivalent
def test_zero_grad_after_the_step(model, sgd, batch):
    x, y = batch
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    sgd.step()
    sgd.zero_grad()
    return loss


@pytest.mark.cgraph_equivalent
def test_grad_accumulation_over_two_micro_batches(model, sgd, batch):
    x, y = batch
    sgd.zero_grad()
    losses = []
    for xs, ys in zip(x.chunk(2), y.chunk(2), strict=True):
        loss = nn.functional.mse_loss(model(xs), ys) / 2
        loss.backward()
        losses.append(loss)
    sgd.step()
    return torch.stack(losses)


@pytest.mark.cgraph_equivalent
def test_clip_grad_norm_before_the_step(model, sgd, batch):
    x, y = batch
    sgd.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.5)
    sgd.step()
    return loss, norm


@pytest.mark.cgraph_equivalent
def test_a_scheduler_steps_with_the_optimizer(model, batch):
    x, y = batch
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scheduler = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    for _ in range(2):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        scheduler.step()
    return loss, torch.tensor(scheduler.get_last_lr())


@pytest.mark.cgraph_equivalent
def test_evaluation_under_no_grad_after_the_step(model, sgd, batch):
    x, y = batch
    sgd.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    sgd.step()
    model.eval()
    with torch.no_grad():
        evaluated = nn.functional.mse_loss(model(x), y)
    model.train()
    return loss, evaluated


@pytest.mark.cgraph_equivalent(rtol=1e-4, atol=1e-5)
@pytest.mark.parametrize("lr", [0.01, 0.1])
def test_a_hand_written_update_of_plain_tensors(batch, lr):
    x, y = batch
    # Made beside the data: under --cgraph-device cuda the batch is moved there.
    w = torch.zeros(4, 1, device=x.device, requires_grad=True)
    b = torch.zeros(1, device=x.device, requires_grad=True)
    loss = ((x @ w + b - y) ** 2).mean()
    loss.backward()
    with torch.no_grad():
        w -= lr * w.grad
        b -= lr * b.grad
    return loss, w, b


@pytest.mark.cgraph_equivalent
def test_autograd_grad_instead_of_backward(model, batch):
    x, y = batch
    loss = nn.functional.mse_loss(model(x), y)
    grads = torch.autograd.grad(loss, list(model.parameters()))
    with torch.no_grad():
        for parameter, grad in zip(model.parameters(), grads, strict=True):
            parameter.sub_(0.1 * grad)
    return loss, torch.stack([g.norm() for g in grads])


@pytest.fixture
def dropout_model():
    torch.manual_seed(0)
    return DropoutNet()


@pytest.mark.cgraph_equivalent
def test_a_mixed_precision_step_with_dropout(dropout_model, batch):
    x, y = batch
    optimizer = torch.optim.AdamW(dropout_model.parameters(), lr=1e-2)
    with torch.autocast(x.device.type, dtype=torch.bfloat16):
        loss = nn.functional.mse_loss(dropout_model(x).float(), y)
    loss.backward()
    optimizer.step()
    return loss
