"""One object graph per side, through the marker and the ``cgraph`` fixture.

A scheduler, a ``GradScaler``, an EMA helper, a module hook over another
object, a closure or a partial over a module: each side gets its own, over
its own copies, and the test's own objects are left as they were. A schedule
the compiled side loses fails the test; an argument that cannot be copied
with its graph fails it in one line.
"""

from __future__ import annotations

import pytest

import cgraph_doubles.inprocess  # noqa: F401  (kept loaded across in-process runs)
from cgraph_doubles.schedules import CHECKED_WITHOUT_CAMPAIGN

pytest_plugins = "pytester"

CHECKED_ON_EAGER = (*CHECKED_WITHOUT_CAMPAIGN, "--cgraph-backend=eager")

#: What the marked tests and the fixture's tests share: the objects a training
#: step keeps, the steps themselves, a record of what each side saw, call by
#: call, and what each test asserts of its own objects after the check.
HELPERS = """
import functools
import threading

import pytest
import torch

from cgraph_doubles.schedules import ScheduleLostWhenCompiled, training

LR = 0.1
BATCH = torch.ones(3, 2)
SEEN = []


def halving(iters):
    return [LR * 0.5**k for k in range(1, iters + 1)]


def per_side():
    return [v for c, v in SEEN if not c], [v for c, v in SEEN if c]


def saw(value):
    SEEN.append((torch.compiler.is_compiling(), value))


@pytest.fixture(autouse=True)
def fresh_record():
    SEEN.clear()


class EMA:
    def __init__(self, model, decay=0.5):
        self.model = model
        self.decay = decay
        self.shadow = [p.detach().clone() for p in model.parameters()]

    def update(self):
        with torch.no_grad():
            for average, parameter in zip(self.shadow, self.model.parameters()):
                average.mul_(self.decay).add_(parameter, alpha=1 - self.decay)


class Stats:
    def __init__(self):
        self.total = torch.zeros(())


class Monitor:
    def __init__(self, net):
        self.net = net
        self.lock = threading.Lock()


def sgd_step(net, opt):
    loss = net(BATCH).sum()
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss.detach()


def nudged(net, x):
    with torch.no_grad():
        net.weight.add_(1.0)
    return net(x)


def scheduled_step(net, opt, sched):
    loss = sgd_step(net, opt)
    sched.step()
    saw(opt.param_groups[0]["lr"])
    return loss


def scaled_step(net, opt, scaler):
    loss = net(BATCH).sum()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    opt.zero_grad()
    saw(scaler.get_scale())
    return loss.detach()


def averaged_step(net, opt, ema):
    loss = sgd_step(net, opt)
    ema.update()
    saw(ema.model is net)
    return loss, ema.shadow[0] * 1


def hooked_forward(net, stats):
    net(BATCH)
    return stats.total * 1


def closure_step(forward, opt):
    loss = sgd_step(forward, opt)
    saw(loss)
    return loss


def lost_schedule_step(net, opt, sched):
    loss = sgd_step(net, opt)
    sched.step()
    return loss


def scheduled():
    net, opt = training()
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    return (net, opt, sched), net.weight.detach().clone()


def schedule_kept(net, opt, sched, weight):
    print(f"per side {per_side()}; caller lr {opt.param_groups[0]['lr']}, "
          f"last_epoch {sched.last_epoch}")
    assert per_side() == (halving(4), halving(4))
    assert (opt.param_groups[0]["lr"], sched.last_epoch) == (LR, 0)
    assert torch.equal(net.weight, weight)


def scaled():
    net, opt = training()
    return net, opt, torch.amp.GradScaler("cpu", init_scale=4.0, growth_interval=1)


def scale_kept(scaler):
    assert per_side() == ([8.0, 16.0, 32.0], [8.0, 16.0, 32.0])
    assert scaler.get_scale() == 4.0


def averaged():
    net, opt = training()
    ema = EMA(net)
    return (net, opt, ema), [average.clone() for average in ema.shadow]


def averages_kept(net, ema, shadow):
    assert per_side() == ([True] * 3, [True] * 3)
    assert ema.model is net
    assert all(torch.equal(a, b) for a, b in zip(ema.shadow, shadow))


def hooked():
    net, _ = training()
    stats = Stats()
    net.register_forward_hook(lambda module, args, out: stats.total.add_(out.detach().sum()))
    return net, stats


def closure():
    net, opt = training()

    def forward(x):
        return net(x)

    return (forward, opt), net, net.weight.detach().clone()


def closure_kept(net, weight):
    assert torch.equal(net.weight, weight) and net.weight.grad is None
    for first, second in per_side():
        assert second < first  # the optimizer steps the model the closure calls


def lost_schedule():
    net, opt = training()
    return net, opt, ScheduleLostWhenCompiled(opt, step_size=1, gamma=0.5)
"""

MARKED = (
    HELPERS
    + """

@pytest.fixture(name="scheduled")
def scheduled_fixture():
    arguments, weight = scheduled()
    yield arguments
    schedule_kept(*arguments, weight)


@pytest.mark.cgraph_equivalent(iters=4)
def test_schedule(scheduled):
    return scheduled_step(*scheduled)


@pytest.fixture(name="scaled")
def scaled_fixture():
    arguments = scaled()
    yield arguments
    scale_kept(arguments[2])


@pytest.mark.cgraph_equivalent(iters=3)
def test_scaler(scaled):
    return scaled_step(*scaled)


@pytest.fixture(name="averaged")
def averaged_fixture():
    (net, opt, ema), shadow = averaged()
    yield net, opt, ema
    averages_kept(net, ema, shadow)


@pytest.mark.cgraph_equivalent(iters=3)
def test_ema(averaged):
    return averaged_step(*averaged)


@pytest.fixture(name="hooked")
def hooked_fixture():
    net, stats = hooked()
    yield net, stats
    assert stats.total.item() == 0.0


@pytest.mark.cgraph_equivalent(iters=3)
def test_hook(hooked):
    return hooked_forward(*hooked)


@pytest.fixture(name="closure")
def closure_fixture():
    arguments, net, weight = closure()
    yield arguments
    closure_kept(net, weight)


@pytest.mark.cgraph_equivalent(iters=2)
def test_closure(closure):
    return closure_step(*closure)


@pytest.fixture
def partial():
    net, _ = training()
    weight = net.weight.detach().clone()
    yield functools.partial(nudged, net)
    assert torch.equal(net.weight, weight)


@pytest.mark.cgraph_equivalent(iters=2)
def test_partial(partial):
    return partial(BATCH)


lost_schedule_fixture = pytest.fixture(lost_schedule, name="lost_schedule")
monitored_fixture = pytest.fixture(lambda: Monitor(training()[0]), name="monitored")


@pytest.mark.cgraph_equivalent(iters=2)
def test_lost_schedule(lost_schedule):
    return lost_schedule_step(*lost_schedule)


@pytest.mark.cgraph_equivalent
def test_monitor(monitored):
    return monitored.net(BATCH)
"""
)

#: The line a Monitor (a model and a lock) fails with, after the test's name.
UNCOPYABLE = (
    "argument monitored (Monitor) holds monitored.net (Linear), which each side gets its "
    "own copy of, so it must be copied with it, but it cannot be copied: cannot pickle "
    "'_thread.lock' object; give Monitor a __deepcopy__, or pass the program what it holds "
    "instead"
)


def run_inner(pytester: pytest.Pytester, source: str, lost: str) -> pytest.RunResult:
    """Run ``source``'s eight tests on eager: six pass, and the lost schedule (as the
    pattern ``lost`` says) and the monitor fail; each test checks its own
    objects and what each side saw."""
    pytester.makepyfile(source)
    result = pytester.runpytest(*CHECKED_ON_EAGER)
    result.assert_outcomes(passed=6, failed=2, deselected=1)
    result.stdout.fnmatch_lines([f"*mutation difference at iteration 1, argument {lost}*"])
    return result


def test_marked_tests_copy_each_side_s_graph_and_leave_the_test_s_objects(
    pytester: pytest.Pytester,
) -> None:
    result = run_inner(pytester, MARKED, "lost_schedule[[]1[]].param_groups[[]0[]].lr")
    output = result.stdout.str()
    result.stdout.fnmatch_lines([f"*test_monitor: {UNCOPYABLE}"])
    assert "Traceback" not in output, output
    assert not any(f"{module}.py" in output for module in ("cloning", "graphs", "sides")), output


FIXTURE = (
    HELPERS
    + """

def test_schedule(cgraph):
    arguments, weight = scheduled()
    cgraph.check(scheduled_step, *arguments, iters=4)
    schedule_kept(*arguments, weight)


def test_scaler(cgraph):
    arguments = scaled()
    cgraph.check(scaled_step, *arguments, iters=3)
    scale_kept(arguments[2])


def test_ema(cgraph):
    (net, opt, ema), shadow = averaged()
    cgraph.check(averaged_step, net, opt, ema, iters=3)
    averages_kept(net, ema, shadow)


def test_hook(cgraph):
    net, stats = hooked()
    cgraph.check(hooked_forward, net, stats, iters=3)
    assert stats.total.item() == 0.0


def test_closure(cgraph):
    arguments, net, weight = closure()
    cgraph.check(closure_step, *arguments, iters=2)
    closure_kept(net, weight)


def test_partial(cgraph):
    net, _ = training()
    weight = net.weight.detach().clone()
    cgraph.check(lambda fn: fn(BATCH), functools.partial(nudged, net), iters=2)
    assert torch.equal(net.weight, weight)


def test_lost_schedule(cgraph):
    cgraph.check(lost_schedule_step, *lost_schedule(), iters=2)


def test_monitor(cgraph):
    cgraph.check(lambda monitored: monitored.net(BATCH), Monitor(training()[0]))
"""
)


def test_fixture_checks_copy_each_side_s_graph_and_leave_the_caller_s_objects(
    pytester: pytest.Pytester,
) -> None:
    result = run_inner(pytester, FIXTURE, "opt.param_groups[[]0[]].lr")
    output = result.stdout.str()
    # The error, in one line, under the test's own line that called the check:
    # none of the plugin's frames.
    result.stdout.fnmatch_lines(
        [
            ">       cgraph.check(lambda monitored: monitored.net(BATCH), Monitor(training()[0]))",
            f"E       pytest_cgraph.oracle.errors.ConfigurationError: {UNCOPYABLE}",
        ]
    )
    assert "pytest_cgraph/" not in output.replace("pytest_cgraph.oracle.errors", ""), output
