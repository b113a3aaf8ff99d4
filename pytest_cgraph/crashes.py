"""Programs that took their process down: read from in-flight records, reported, saved.

Under pytest-xdist the controller learns of a dead worker through
``pytest_handlecrashitem`` and turns the worker's in-flight record into the
item's failure, with the program saved as a repro (verified by running it
in a subprocess). A run without xdist that died leaves its record behind;
the next run reports it as the item ``cgraph::died::<item>``. Either way,
what the campaign was checking when the process died is not lost.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_cgraph import session
from pytest_cgraph.failures import Failure
from pytest_cgraph.guard import (
    DeadProgram,
    inflight_path,
    read_dead_program,
    remove_record,
    stale_records,
)
from pytest_cgraph.options import OPTIONS_KEY, CgraphOptions
from pytest_cgraph.stats import REPORT_KEY, RunStats


def report_dead_program(
    dead: DeadProgram, options: CgraphOptions, cause: str
) -> tuple[str, Failure]:
    """Write the dead program's repro; the failure's text and the failure."""
    from pytest_cgraph.repro import make_repro

    failure = make_repro(dead.failure(cause), options.repro_dir)
    stacks = (
        f"\n\nstack at the hard time limit (most recent call first):\n{_main_stack(dead.stacks)}"
        if dead.timed_out
        else ""
    )
    return failure.report() + stacks, failure


def _main_stack(stacks: str, lines: int = 20) -> str:
    """The main thread's innermost frames from faulthandler's dump.

    The dump lists threads newest first, so the main thread, the one that
    was checking the program, comes last.
    """
    sections = [part for part in stacks.strip().split("\n\n") if "(most recent call first)" in part]
    main = (sections[-1] if sections else stacks.strip()).splitlines()
    return "\n".join(main[: lines + 1] + (["  ..."] if len(main) > lines + 1 else []))


def handle_crashed_item(config: pytest.Config, nodeid: str, report: pytest.TestReport) -> None:
    """xdist's worker died running ``nodeid``: report the program it was checking."""
    options = config.stash[OPTIONS_KEY]
    record = inflight_path(options.repro_dir, nodeid)
    dead = read_dead_program(record)
    if dead is None:
        return  # not a campaign item, or it died between programs: xdist's report stands
    text, failure = report_dead_program(dead, options, f"the worker died ({report.longrepr})")
    dead.forget()
    report.longrepr = text
    report.__dict__[REPORT_KEY] = RunStats(failures=[failure]).to_json()


class DiedItem(pytest.Item):
    """``cgraph::died::<item>``: a previous run died while checking a program."""

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
        text, failure = report_dead_program(dead, self.options, "the previous run's process died")
        session.stats_of(self).failures.append(failure)
        dead.forget()
        raise DeadProgramFound(text)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, DeadProgramFound):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[str, int | None, str]:
        return "cgraph", None, f"a previous run died: {self.record.name}"


class DeadProgramFound(AssertionError):
    """A program killed the process that checked it."""


def died_items(session: pytest.Session, options: CgraphOptions) -> list[DiedItem]:
    """One item per record left by a process that is gone."""
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
