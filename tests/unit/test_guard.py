"""Containment: the soft time limit, in-flight records, and how dead processes are described."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_cgraph.checking.guard import (
    InFlight,
    ProgramTimeout,
    read_dead_program,
    stale_records,
    time_limit,
)
from pytest_cgraph.failures import Case


def program(timeout: float | None = None) -> Case:
    return Case(
        nodeid="cgraph::mutation",
        family="mutation",
        source="def program():\n    pass\n",
        backend="aot_eager",
        device="cpu",
        iters=5,
        timeout=timeout,
        setup_modules=("cgraph_doubles.killers",),
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
    inflight.start(program(timeout=60))
    dead = read_dead_program(inflight.path)
    assert dead is not None and dead.case == program(timeout=60) and dead.pid == os.getpid()
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
    inflight.start(program())
    record = json.loads(inflight.path.read_text())
    inflight.path.write_text(json.dumps({**record, "pid": gone.pid}))
    inflight.stacks_path.write_text("Timeout (0:02:10)!\nThread 0x1 (most recent call first):\n")
    assert stale_records(tmp_path) == [inflight.path]
    dead = read_dead_program(inflight.path)
    assert dead is not None and dead.timed_out
    # The same dead pid on another host (a directory shared over the network)
    # says nothing here: that host's own processes will judge it.
    inflight.path.write_text(json.dumps({**record, "pid": gone.pid, "host": "elsewhere"}))
    assert stale_records(tmp_path) == []
    claimed = inflight.path.with_name(f"{inflight.path.stem}.claimed-elsewhere-{gone.pid}.json")
    inflight.path.replace(claimed)
    claimed.write_text(json.dumps({**record, "pid": gone.pid}))
    assert stale_records(tmp_path) == []  # its claimer, on another host, may be alive
    claimed.replace(inflight.path)
    inflight.path.write_text("{not json")
    assert read_dead_program(inflight.path) is None  # a torn record is skipped, not fatal


def test_a_dead_program_is_a_hang_or_a_death_and_is_forgotten_once_reported(
    tmp_path: Path,
) -> None:
    inflight = InFlight(tmp_path, "cgraph::mutation")
    inflight.start(program(timeout=3))
    inflight.finish()  # the hard limit disarmed: this process must not end
    dead = read_dead_program(inflight.path)
    assert dead is not None and not dead.timed_out
    died = dead.failure("the worker died")
    assert died.case == program(timeout=3)
    assert died.signature == "crash-process-died"  # named by its repro's run, if a signal
    assert died.difference.detail == "the worker died"
    inflight.stacks_path.write_text("Timeout (0:00:13)!\n")
    hung = read_dead_program(inflight.path)
    assert hung is not None and hung.timed_out
    failure = hung.failure("the next run")
    assert failure.signature == "timeout-program"
    assert failure.difference.detail == "it ran past the hard limit and the next run ended it"
    hung.forget()
    assert list(tmp_path.iterdir()) == []  # record, stacks and their directory are gone
    inflight.close()
