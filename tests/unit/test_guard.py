"""Containment: the soft time limit, in-flight records, and how dead processes are described."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_cgraph.checkers import Outcome, describe_exit
from pytest_cgraph.guard import (
    InFlight,
    InFlightProgram,
    ProgramTimeout,
    read_dead_program,
    stale_records,
    time_limit,
)


def program(pid: int, timeout: float = 0.0) -> InFlightProgram:
    return InFlightProgram(
        nodeid="cgraph::mutation",
        family="mutation",
        source="def program():\n    pass\n",
        backend="aot_eager",
        device="cpu",
        iters=5,
        timeout=timeout,
        setup_modules=("cgraph_doubles.killers",),
        pid=pid,
        seed=7,
    )


def test_a_hang_in_python_is_interrupted_at_the_limit() -> None:
    started = time.monotonic()
    with pytest.raises(ProgramTimeout, match=r"longer than the 0\.2 s time limit"), time_limit(0.2):
        while True:
            time.sleep(0.01)
    assert 0.15 < time.monotonic() - started < 2.0


def test_a_quick_block_is_not_interrupted_and_an_outer_limit_survives() -> None:
    with pytest.raises(ProgramTimeout, match=r"0\.5 s"), time_limit(0.5):
        with time_limit(5):
            pass  # the inner limit is disarmed on exit and the outer re-armed
        time.sleep(2)


def test_no_limit_means_none() -> None:
    with time_limit(0):
        time.sleep(0.05)
    with time_limit(None):
        time.sleep(0.05)


def test_an_inflight_record_is_written_before_and_removed_after(tmp_path: Path) -> None:
    inflight = InFlight(tmp_path, "cgraph::mutation")
    inflight.start(program(os.getpid(), timeout=60))
    dead = read_dead_program(inflight.path)
    assert dead is not None and dead.program == program(os.getpid(), timeout=60)
    assert not dead.timed_out
    assert stale_records(tmp_path) == []  # this process is alive
    inflight.finish()
    inflight.close()
    assert not inflight.path.exists() and not inflight.stacks_path.exists()
    assert list(tmp_path.iterdir()) == []  # no empty directories left behind


def test_records_of_dead_processes_are_stale_and_the_watchdog_header_means_timeout(
    tmp_path: Path,
) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    inflight = InFlight(tmp_path, "cgraph::views")
    inflight.start(program(gone.pid))
    inflight.stacks_path.write_text("Timeout (0:02:10)!\nThread 0x1 (most recent call first):\n")
    assert stale_records(tmp_path) == [inflight.path]
    dead = read_dead_program(inflight.path)
    assert dead is not None and dead.timed_out
    inflight.path.write_text("{not json")
    assert read_dead_program(inflight.path) is None  # a torn record is skipped, not fatal


def test_how_a_process_ended_is_described() -> None:
    assert describe_exit(-11) == "killed by SIGSEGV"
    assert describe_exit(-6) == "killed by SIGABRT"
    assert describe_exit(3) == "exited with status 3"
    died = Outcome("died", message="killed by SIGSEGV").difference()
    assert died is not None and died[0].signature == "crash-process-SIGSEGV"
    assert died[0].ends_process and died[1] == "crash of the process: killed by SIGSEGV"
    timeout = Outcome("timeout", message="ran longer than the 3 s limit").difference()
    assert timeout is not None and timeout[0].signature == "timeout-program"
    assert Outcome("pass").difference() is None
