"""A campaign survives programs that segfault, hang or flake, and keeps what it found."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import cgraph_doubles.inprocess  # noqa: F401  (kept loaded across in-process runs)
from cgraph_doubles import killers as killer_backends
from pytest_cgraph.checking.guard import InFlight
from pytest_cgraph.failures import Case, death

pytest_plugins = "pytester"

TESTS = Path(__file__).resolve().parents[1]

#: The segfaulting double dies in a file of its own, no frame of torch's
#: inside Dynamo's wrapper: a site names only torch's files, so it has none.
SEGFAULT = death("", "SIGSEGV").signature

PASSING = """
def test_unrelated_work_still_runs():
    assert sum(range(4)) == 6
"""


@pytest.fixture
def killers(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("PYTHONPATH", str(TESTS))
    pytester.makepyfile(PASSING)
    return pytester


def hunt(
    pytester: pytest.Pytester, backend: str, *args: str, in_process: bool = False
) -> pytest.RunResult:
    """A hunt in a fresh pytest process, or in this one when nothing in it can kill or hang it."""
    run = pytester.runpytest if in_process else pytester.runpytest_subprocess
    return run(
        "--cgraph",
        "-p",
        "no:cacheprovider",
        "-p",
        "cgraph_doubles.killers",
        f"--cgraph-backend={backend}",
        "--cgraph-seed=3",
        *args,
    )


def repros(pytester: pytest.Pytester) -> list[str]:
    return sorted(path.name for path in (pytester.path / "cgraph-repros").glob("*.py"))


def test_a_segfault_under_xdist_is_a_crash_with_its_program_saved(killers: pytest.Pytester) -> None:
    result = hunt(killers, "faulty_segfault", "-n", "2", "--cgraph-families=mutation,views")
    # both items' workers died (each was replaced); the rest of the run went on
    result.assert_outcomes(passed=1, failed=2)
    output = result.stdout.str()
    assert "crash of the process: the worker died" in output
    assert "program (mutation):" in output
    assert "python FILE killed by SIGSEGV" in output
    # named by the signal and the site the verifying run died of, as under --cgraph-isolate
    assert repros(killers) == [f"{SEGFAULT}.py"]
    saved = killers.path / "cgraph-repros" / f"{SEGFAULT}.py"
    assert subprocess.run([sys.executable, str(saved)], check=False).returncode == -11
    assert not list((killers.path / "cgraph-repros").glob(".cgraph-inflight/*"))


# A time-boxed hunt checks in a recycled child without being asked (its
# memory stays bounded over hours): a segfault is contained the same way.
@pytest.mark.parametrize(
    "budget",
    [["--cgraph-isolate", "--cgraph-examples=3"], ["--cgraph-duration=30s"]],
    ids=["isolate", "duration"],
)
def test_a_segfault_without_xdist_is_contained_by_isolate(
    killers: pytest.Pytester, budget: list[str]
) -> None:
    result = hunt(killers, "faulty_segfault", "--cgraph-families=views", *budget)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*crash of the process: killed by SIGSEGV*",
            f"*repro (written): cgraph-repros/{SEGFAULT}.py -- python FILE killed by SIGSEGV",
        ]
    )


def test_a_hang_is_a_timeout_failure_within_the_limit(killers: pytest.Pytester) -> None:
    started = time.monotonic()
    result = hunt(
        killers,
        "faulty_hang",
        "--cgraph-timeout=1",  # every program hangs: each costs the whole limit
        "--cgraph-families=mutation",
        "--cgraph-examples=100",  # every program hangs: the item stops after 3 known hangs
    )
    elapsed = time.monotonic() - started
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "timeout of the program: it ran longer than the 1 s time limit",
            "*repro (written): cgraph-repros/timeout-program.py -- "
            "python FILE hung past TIMEOUT = 1 s",
            "stopped hunting early: the last 3 programs hung or killed their process *",
        ]
    )
    # the limit, the shrink budget (20 s) and one verifying run of the repro
    assert elapsed < 60, elapsed
    text = (killers.path / "cgraph-repros" / "timeout-program.py").read_text()
    assert "TIMEOUT = 1.0" in text


# Deep: mostly waiting for the hard limit; the hang within the limit stays in the default run.
@pytest.mark.deep
def test_a_hang_that_ignores_interruption_meets_the_hard_limit(killers: pytest.Pytester) -> None:
    started = time.monotonic()
    result = hunt(
        killers,
        "faulty_stubborn_hang",
        "-n",
        "2",
        "--cgraph-timeout=1",
        "--cgraph-families=views",
    )
    elapsed = time.monotonic() - started
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*timeout of the program: it ran past the hard limit*",
            "*stack at the hard time limit (most recent call first):*",
            "*in stubborn_hang*",
        ]
    )
    assert repros(killers) == ["timeout-program.py"]
    assert elapsed < 90, elapsed


def test_a_failure_that_does_not_replay_is_reported_as_flaky(
    killers: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # In process, so the backend's count of graphs compiled starts again from 0.
    monkeypatch.setitem(killer_backends._compiled, "graphs", 0)
    result = hunt(
        killers,
        "faulty_flaky",
        "--cgraph-families=mutation",
        "--cgraph-examples=5",
        in_process=True,
    )
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*value difference at iteration 3*",
            "no repro file (flaky): it failed once, then the same program passed when replayed",
            "  silent: value-output (value, mutation, iteration 3, *): cgraph::mutation (flaky)",
        ]
    )
    assert repros(killers) == []


def test_a_run_that_died_is_reported_by_the_next(killers: pytest.Pytester) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    record = InFlight(killers.path / "cgraph-repros", "cgraph::mutation")
    record.start(
        Case(
            nodeid="cgraph::mutation",
            family="mutation",
            source=(
                "import torch\n\n\ndef program(a0):\n    return (a0 + 1,)\n\n\n"
                "def inputs(k):\n    return (torch.ones(2),)\n\n\nFRESH_INPUTS = False\nITERS = 5\n"
            ),
            backend="faulty_segfault",
            device="cpu",
            iters=5,
            timeout=0,
            setup_modules=("cgraph_doubles.killers",),
        ),
        pid=gone.pid,
    )
    # In process: the dead run's program is verified in a child, which dies instead.
    result = hunt(
        killers, "aot_eager", "--cgraph-families=views", "--cgraph-examples=2", in_process=True
    )
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*crash of the process: the previous run's process died*",
            f"*repro (written): cgraph-repros/{SEGFAULT}.py -- python FILE killed by SIGSEGV",
        ]
    )
    assert not record.path.exists()
    assert os.path.exists(killers.path / "cgraph-repros" / f"{SEGFAULT}.py")


# Deep: a second dead-worker run; a segfault under xdist stays in the default run.
@pytest.mark.deep
def test_report_records_crashes_from_dead_workers(killers: pytest.Pytester) -> None:
    result = hunt(
        killers,
        "faulty_segfault",
        "-n",
        "2",
        "--cgraph-families=rng",
        "--cgraph-report=r.json",
    )
    result.assert_outcomes(passed=1, failed=1)
    report = json.loads((killers.path / "r.json").read_text())
    assert [(f["signature"], f["nodeid"]) for f in report["failures"]] == [
        (SEGFAULT, "cgraph::rng")
    ]


def test_foreign_and_corrupted_files_in_the_repro_dir_are_left_alone(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(TESTS))
    directory = pytester.path / "cgraph-repros"
    directory.mkdir()
    foreign = b"# my notes on the replay crash\n"
    corrupted = b"# pytest-cgraph repro\n\x00\xff\xfe torn by a full disk"
    name = "crash-compiled_call-RuntimeError-replay_crashed_c380cb"
    (directory / f"{name}.py").write_bytes(foreign)
    (directory / f"{name}-2.py").write_bytes(corrupted)
    result = pytester.runpytest(
        "--cgraph",
        "-p",
        "no:cacheprovider",
        "-p",
        "cgraph_doubles.faults",
        "--cgraph-backend=faulty_crash_on_replay",
        "--cgraph-families=views",
        "--cgraph-examples=3",
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"repro (written): cgraph-repros/{name}-3.py -- *"])
    assert (directory / f"{name}.py").read_bytes() == foreign
    assert (directory / f"{name}-2.py").read_bytes() == corrupted
