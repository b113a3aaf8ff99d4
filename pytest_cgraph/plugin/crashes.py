"""Programs that took their process down: read from in-flight records, reported, saved.

A process that dies while checking a program leaves its in-flight record
behind, in its own working directory. Whoever finds it reports it:

- **under pytest-xdist**, a worker, which may be on another host: at the
  start of each of its items and when it finishes, a worker claims the
  records of dead processes in its directory (its predecessor's, or an
  earlier run's), verifies each program's repro by running it in a
  subprocess, and sends the failure to the controller with its next
  report. The controller writes the repro and puts the program in the
  report of the item whose worker died (``pytest_handlecrashitem``), so
  nothing depends on a filesystem the two share;
- **without xdist**, the next run, as the item ``cgraph::died::<item>``.

Either way, what the campaign was checking when the process died is not lost.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_cgraph.checking.guard import (
    DeadProgram,
    claim_stale_records,
    read_dead_program,
    remove_record,
    stale_records,
)
from pytest_cgraph.errors import CgraphError
from pytest_cgraph.failures import Failure, FailureText, Shown
from pytest_cgraph.plugin import session
from pytest_cgraph.plugin.items import CgraphItem
from pytest_cgraph.plugin.options import OPTIONS_KEY, CgraphOptions
from pytest_cgraph.plugin.wire import DeadProgramMessage


def report_dead_program(
    dead: DeadProgram, repro_dir: Path, cause: str
) -> tuple[FailureText, Failure]:
    """Verify the dead program's repro (not written yet); the failure's text and the failure."""
    from pytest_cgraph.recording.repro import verify_repro

    failure = verify_repro(dead.failure(cause), repro_dir)
    stacks = (
        f"\n\nstack at the hard time limit (most recent call first):\n{_main_stack(dead.stacks)}"
        if dead.timed_out
        else ""
    )
    return FailureText((Shown(failure), stacks)), failure


def _main_stack(stacks: str, lines: int = 20) -> str:
    """The main thread's innermost frames from faulthandler's dump.

    The dump lists threads newest first, so the main thread, the one that
    was checking the program, comes last.
    """
    sections = [part for part in stacks.strip().split("\n\n") if "(most recent call first)" in part]
    main = (sections[-1] if sections else stacks.strip()).splitlines()
    return "\n".join(main[: lines + 1] + (["  ..."] if len(main) > lines + 1 else []))


def dead_programs_to_send(config: pytest.Config) -> list[dict[str, Any]]:
    """In an xdist worker: the programs of dead processes in this worker's directory,
    claimed and verified here, as messages for the controller."""
    options = config.stash[OPTIONS_KEY]
    if not options.enabled:
        return []
    messages = []
    for dead in claim_stale_records(options.repro_dir):
        text, _ = report_dead_program(dead, options.repro_dir, "the worker died")
        messages.append(DeadProgramMessage(dead.case.nodeid, text).pack())
        dead.forget()
    return messages


def receive_dead_programs(config: pytest.Config, messages: list[dict[str, Any]]) -> None:
    """On the controller: write each dead program's repro, count it, and put it in the
    report of the item whose worker died (or keep it for the summary)."""
    from pytest_cgraph.plugin.live import LIVE_KEY

    live = config.stash.get(LIVE_KEY, None)
    if live is None:
        return
    for data in messages:
        message = DeadProgramMessage.unpack(data)
        for failure in message.text.failures:
            live.add_failure(message.nodeid, failure)
        text = live.rendered(message.text)
        crashed = live.crashed.pop(message.nodeid, None)
        if crashed is not None:
            report, said = crashed
            report.longrepr = f"{said}\n\n{text}"
        else:
            live.dead_elsewhere.append(text)


def handle_crashed_item(config: pytest.Config, nodeid: str, report: pytest.TestReport) -> None:
    """xdist's worker died running ``nodeid``: keep its report for the program to come.

    The dead worker's record is in that worker's directory, maybe on
    another host: the next worker to start there sends the program, which
    :func:`receive_dead_programs` adds to this report.
    """
    from pytest_cgraph.plugin.live import LIVE_KEY

    live = config.stash.get(LIVE_KEY, None)
    if live is None or not nodeid.startswith("cgraph::"):
        return
    live.crashed[nodeid] = (report, str(report.longrepr))
    report.longrepr = (
        f"{report.longrepr}\nthe program it was checking stays in its in-flight record, "
        "for the next worker to start in that directory to send here (or the next run)"
    )


class DeadProgramFound(CgraphError, AssertionError):
    """A program killed the process that checked it."""

    def __init__(self, text: FailureText) -> None:
        super().__init__(text.render())
        text.attach(self)


class DiedItem(CgraphItem):
    """``cgraph::died::<item>``: a previous run died while checking a program."""

    reported_as_text = (DeadProgramFound,)

    def __init__(self, *, record: Path, options: CgraphOptions, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.record = record
        self.options = options
        self.add_marker("cgraph")

    def runtest(self) -> None:
        dead = read_dead_program(self.record)
        if dead is None:
            remove_record(self.record)
            return  # unreadable: nothing to report, nothing to keep
        # Verified here; written by the run's controller (this process)
        # when it receives the item's statistics.
        text, failure = report_dead_program(
            dead, self.options.repro_dir, "the previous run's process died"
        )
        session.stats_of(self).failures.append(failure)
        dead.forget()
        raise DeadProgramFound(text)

    def description(self) -> str:
        return f"a previous run died: {self.record.name}"


def died_items(session: pytest.Session, options: CgraphOptions) -> list[DiedItem]:
    """One item per record left by a process that is gone (in a run without xdist
    workers: a worker sends such records to the controller instead, so that
    workers in different directories still collect the same items)."""
    if hasattr(session.config, "workerinput"):
        return []
    return [
        DiedItem.from_parent(
            session,
            name=f"died::{record.stem}",
            nodeid=f"cgraph::died::{record.stem}",
            record=record,
            options=options,
        )
        for record in stale_records(options.repro_dir)
    ]
