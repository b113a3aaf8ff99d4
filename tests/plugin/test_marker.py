"""``@pytest.mark.cgraph_equivalent``: eager-only without --cgraph, checked with it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import cgraph_doubles.inprocess  # noqa: F401  (kept loaded across in-process runs)
from cgraph_doubles.schedules import CHECKED_WITHOUT_CAMPAIGN
from cgraph_doubles.workers import WORKERS

pytest_plugins = "pytester"

TESTS = Path(__file__).resolve().parents[1]


MARKED = """
import sys

import pytest
import torch
from hypothesis import given, settings, strategies as st


@pytest.fixture
def weight():
    return torch.randn(3, requires_grad=True)


@pytest.mark.cgraph_equivalent
def test_step(weight):
    return (weight * 2).sin()


@pytest.mark.cgraph_equivalent(iters=4)
@pytest.mark.parametrize("n", [2, 3])
def test_mutates_its_argument(n):
    x = torch.ones(n)
    x.add_(1)
    return x * 3


@pytest.mark.cgraph_equivalent
@settings(max_examples=3, deadline=None)
@given(scale=st.floats(0.5, 2.0))
def test_with_given(scale):
    return torch.arange(4.0) * scale
"""

BAD = """
import sys

import pytest
import torch


@pytest.mark.cgraph_equivalent(iterations=3)
def test_unknown_argument():
    return torch.ones(1)


@pytest.mark.cgraph_equivalent(iters="five")
def test_wrong_type():
    return torch.ones(1)


@pytest.mark.cgraph_equivalent
def test_returns_nothing():
    torch.ones(1)


@pytest.mark.cgraph_equivalent
def test_returns_a_string():
    return str(torch.ones(1))


@pytest.mark.cgraph_equivalent(backend="relu_accuracy_error_TESTING_ONLY")
def test_differs():
    return torch.relu(torch.tensor([-1.0, 2.0]))


@pytest.mark.cgraph_equivalent
def test_eager_raises():
    return torch.ones(2).view(3)
"""


def test_marked_tests_pass_eagerly_without_cgraph(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(MARKED)
    result = pytester.runpytest("-p", "no:cacheprovider", "-W", "error")
    result.assert_outcomes(passed=4)
    assert "cgraph summary" not in result.stdout.str()


@pytest.mark.parametrize("workers", WORKERS)
def test_marked_tests_are_checked_with_cgraph(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    pytester.makepyfile(MARKED)
    # In process, but xdist workers are processes of their own.
    run = pytester.runpytest_subprocess if workers else pytester.runpytest
    result = run(*CHECKED_WITHOUT_CAMPAIGN, *workers)
    outcomes = result.parseoutcomes()  # xdist does not report deselected items
    assert (outcomes.get("passed"), outcomes.get("failed", 0)) == (4, 0), result.stdout.str()
    # 1 + 2 parametrized + at least 3 Hypothesis examples, all checked
    result.stdout.fnmatch_lines(["programs: * checked, 0 invalid*"])
    checked = int(result.stdout.str().split("programs: ")[1].split()[0])
    assert checked >= 6
    # No campaign ran: its lines are left out.
    assert "op coverage" not in result.stdout.str()
    assert "per family" not in result.stdout.str()


def test_bad_marked_tests_say_what_is_wrong_in_one_line(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(BAD)
    result = pytester.runpytest(*CHECKED_WITHOUT_CAMPAIGN)
    result.assert_outcomes(failed=4, errors=2, deselected=1)
    result.stdout.fnmatch_lines_random(
        [
            "*test_returns_a_string: a @pytest.mark.cgraph_equivalent test must return the "
            "tensors to compare (got str)",
            "*test_unknown_argument: @pytest.mark.cgraph_equivalent: unknown argument "
            "'iterations'; allowed: iters, backend, rtol, atol",
            "*test_wrong_type: @pytest.mark.cgraph_equivalent: iters must be a positive integer, "
            "got 'five'",
            "*test_returns_nothing: a @pytest.mark.cgraph_equivalent test must return the "
            "tensors to compare (got None)",
            "*value difference at iteration 1, output #0*",
            "*RuntimeError: shape '[[]3[]]' is invalid for input of size 2",
        ]
    )


FAILING = """
import sys

import pytest
import torch
from hypothesis import given, settings, strategies as st

OFFSET = 6.0


def shifted(x):
    return torch.relu(x - OFFSET)


@pytest.fixture
def grid():
    return torch.arange(12.0)[2:8].view(2, 3).t()


@pytest.fixture
def model():
    return torch.nn.Linear(3, 4)


@pytest.mark.cgraph_equivalent(backend="relu_accuracy_error_TESTING_ONLY")
def test_fixture_argument(grid):
    return shifted(grid).sum() + grid


@pytest.mark.cgraph_equivalent(backend="relu_runtime_error_TESTING_ONLY")
@settings(max_examples=5, deadline=None, database=None)
@given(n=st.integers(1, 5))
def test_given_argument(n):
    return torch.relu(torch.arange(float(n)) - 3)


@pytest.mark.cgraph_equivalent(backend="relu_accuracy_error_TESTING_ONLY")
def test_module_argument(model):
    return torch.relu(model(torch.ones(3)) - 9)
"""


def test_failing_marked_tests_leave_standalone_repros(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(FAILING)
    result = pytester.runpytest(*CHECKED_WITHOUT_CAMPAIGN, "--cgraph-repro-dir=repros")
    result.assert_outcomes(failed=3, deselected=1)
    output = result.stdout.str()
    assert "cgraph repro (written): repros/value-output.py" in output, output
    # The module argument's program makes other calls than the grid's: a value
    # difference at an output is told apart by its calls, so its repro goes beside.
    assert "cgraph repro (written): repros/value-output-2.py" in output, output
    assert "During handling" not in output and "marker.py" not in output
    repros = sorted((pytester.path / "repros").glob("*.py"))
    assert [path.name for path in repros] == [
        "crash-compiled_call-AssertionError-ReluRuntimeError_b3ea65.py",
        "value-output-2.py",
        "value-output.py",
    ]
    crash, _, value = (path.read_text() for path in repros)
    # The fixture's view keeps its layout; the Hypothesis case is the shrunk one.
    assert "_storage0.as_strided((3, 2), (1, 3), 2)" in value and "OFFSET = 6.0" in value
    assert "n = 1\n" in crash and "def _test_given_argument(n):" in crash
    assert (
        "replay: pytest --cgraph 'test_failing_marked_tests_leave_standalone_repros.py::" in crash
    )
    for path in repros:
        imports = [line for line in path.read_text().splitlines() if "import " in line]
        assert not any("pytest" in line or "hypothesis" in line for line in imports), imports
        python = pytester.run(sys.executable, str(path))
        assert python.ret == 1 and "REPRODUCED" in python.stdout.str(), python.stdout.str()
        fixed = pytester.run(sys.executable, str(path), "--backend", "aot_eager")
        assert fixed.ret == 0, fixed.stdout.str()
    regression = pytester.runpytest("repros", "-p", "no:cacheprovider")
    regression.assert_outcomes(failed=3)


def test_a_module_argument_is_rebuilt_in_its_repro(pytester: pytest.Pytester) -> None:
    path = pytester.makepyfile(FAILING)
    result = pytester.runpytest(
        *CHECKED_WITHOUT_CAMPAIGN, "--cgraph-repro-dir=repros", f"{path.name}::test_module_argument"
    )
    result.assert_outcomes(failed=1)
    (repro,) = (pytester.path / "repros").glob("*.py")
    text = repro.read_text()
    assert "from torch.nn.modules.linear import Linear" in text
    assert "model = _rebuilt(Linear, True, {'in_features': 3, 'out_features': 4}" in text
    python = pytester.run(sys.executable, str(repro))
    assert python.ret == 1 and "REPRODUCED" in python.stdout.str(), python.stdout.str()
    fixed = pytester.run(sys.executable, str(repro), "--backend", "aot_eager")
    assert fixed.ret == 0, fixed.stdout.str()


TRAINING = """
import pytest
import torch
from torch import nn


class TwoLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 4)
        self.head = nn.Sequential(nn.Tanh(), nn.Linear(4, 1))

    def forward(self, x):
        return self.head(self.lin(x))


def loss_of(net):
    return net(torch.ones(2, 3)).pow(2).mean()


@pytest.fixture
def net():
    torch.manual_seed(0)
    return TwoLayer()


@pytest.fixture
def adam(net):
    opt = torch.optim.Adam(net.parameters(), lr=0.1, amsgrad=True)
    loss_of(net).backward()
    opt.step()  # the test starts from this state, and from the .grad it left
    return opt


@pytest.mark.cgraph_equivalent(iters=4)
def test_adam_step(net, adam):
    adam.zero_grad()
    loss = loss_of(net)
    loss.backward()
    adam.step()
    return loss.detach()
"""


def test_module_and_optimizer_arguments_are_rebuilt_in_their_repro(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The fault double loses the step's writes to the parameters from call 3 on.
    monkeypatch.setenv("PYTHONPATH", str(TESTS))  # python FILE imports its module
    pytester.makepyfile(TRAINING)
    result = pytester.runpytest(
        *CHECKED_WITHOUT_CAMPAIGN,
        "-p",
        "cgraph_doubles.faults",
        "--cgraph-backend=faulty_lost_input_mutation",
        "--cgraph-repro-dir=repros",
    )
    result.assert_outcomes(failed=1, deselected=1)
    result.stdout.fnmatch_lines(
        [
            "mutation difference at iteration 3, argument net.*",
            "cgraph repro (written): repros/mutation-argument*.py*",
        ]
    )
    (repro,) = (pytester.path / "repros").glob("*.py")
    text = repro.read_text()
    # The user's module class is carried, the optimizer's imported; its groups
    # name the module's parameters, and the fixture's step left state to carry.
    assert "class TwoLayer(nn.Module):" in text and "from torch.optim.adam import Adam" in text
    assert "net = _rebuilt(TwoLayer, True," in text
    assert "net.get_parameter('head.1.weight')" in text and "'amsgrad': True" in text
    assert "'max_exp_avg_sq': _tensor" in text and "'step': _tensor" in text
    python = pytester.run(sys.executable, str(repro))
    assert python.ret == 1 and "REPRODUCED" in python.stdout.str(), python.stdout.str()
    fixed = pytester.run(sys.executable, str(repro), "--backend", "eager")
    assert fixed.ret == 0, fixed.stdout.str()


KNOWN_TORCH_BUG = """
import pytest
import torch


@pytest.fixture
def grid():
    return torch.ones(3, 2)


@pytest.mark.cgraph_equivalent(backend="aot_eager")
def test_foreach_over_a_tensor_and_its_row(grid):
    torch._foreach_mul_([grid, grid[0]], 2.0)
    return grid * 1


@pytest.mark.cgraph_equivalent(backend="aot_eager", iters=2)
def test_plain_difference(grid):
    return grid * 1
"""


def test_a_marked_test_that_meets_a_known_torch_bug_names_it(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(KNOWN_TORCH_BUG)
    result = pytester.runpytest(*CHECKED_WITHOUT_CAMPAIGN)
    # It fails (the compiler differs from eager), and says whose bug it is and where it is filed.
    result.assert_outcomes(failed=1, passed=1, deselected=1)
    result.stdout.fnmatch_lines(
        [
            "value difference at iteration 1, output #0",
            "cgraph: a known torch bug, foreach-duplicate-tensor (torch-2.13/value-output-*.toml)",
            "cgraph repro (written): *",
        ]
    )
    # The run's summary counts it as the known bug seen again, not as a new one.
    result.stdout.fnmatch_lines(
        [
            "failures: 0 new signature(s)*",
            # outside torch.compile's contract (see the known-bugs page): not to file
            "known: 1 bug(s) seen again (1 registry entry; 1 of them not to file), not new "
            "(a marked test or fixture "
            "check that meets one fails all the same)",
        ]
    )
