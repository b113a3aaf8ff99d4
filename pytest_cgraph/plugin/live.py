"""A campaign's figures while it runs, and the one process that writes its files.

Under pytest-xdist only the controller writes the repro dir and the JSON
report: workers may run on other hosts, with no filesystem in common. So
workers *send* what they find and count, as it happens:

- a running item's statistics so far, every ``SNAPSHOT_SECONDS`` and at once
  when it records a failure, inside an extra, passed ``setup`` report of
  that item (the one message pytest-xdist forwards while a test runs; a
  passed setup report shows nothing in the terminal);
- its final statistics in its call report, as before.

A failure arrives with its repro *verified* on the worker (which has the
torch and the device that found it) and its text attached; the controller
(:class:`LiveRun`) writes it the first time it arrives, keeps the latest
statistics of every item, and rewrites the JSON report atomically, so a run
killed at any moment leaves a valid report of what was done, with a record
of findings over time and of each worker's rate and memory. Without xdist
the same :class:`LiveRun` is fed directly, in the one process.
"""

from __future__ import annotations

import os
import resource
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_cgraph.failures import Failure, FailureText, ReproResult
from pytest_cgraph.plugin.wire import SNAPSHOT_KEY, ItemMessage
from pytest_cgraph.reporting.stats import RunStats, report_data, write_report

#: Seconds between two snapshots of a running item.
SNAPSHOT_SECONDS = 10.0

#: Seconds between two rewrites of the JSON report (an item's end always rewrites it).
WRITE_SECONDS = 5.0

#: Seconds between two samples of the run's progress in the report.
SAMPLE_SECONDS = 10.0

#: Samples kept: past this, every other one is dropped (a run of days stays small).
MAX_SAMPLES = 1000

#: The worker name of a run without xdist.
MAIN = "main"

LIVE_KEY = pytest.StashKey["LiveRun"]()


def rss_mb(pid: int | str = "self") -> float:
    """A process's resident memory now, in MB (this one's peak where ``/proc`` is absent,
    0 for another process then)."""
    try:
        with open(f"/proc/{pid}/statm") as statm:
            pages = int(statm.read().split()[1])
        return round(pages * os.sysconf("SC_PAGE_SIZE") / 2**20, 1)
    except (OSError, ValueError, IndexError):
        if pid != "self":
            return 0.0
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return round(peak / 2**20 if sys.platform == "darwin" else peak / 2**10, 1)


def snapshot(stats: RunStats, children: list[int] | None = None) -> ItemMessage:
    """What one message about a running item carries: its statistics and the memory of
    the worker and of the ``children`` that check for it."""
    memory = rss_mb() + sum(rss_mb(child) for child in children or [])
    return ItemMessage(stats, round(memory, 1))


def send_snapshot(item: pytest.Item, stats: RunStats, children: list[int] | None = None) -> None:
    """Send ``item``'s statistics so far to whoever writes the run's files.

    In an xdist worker, as a passed setup report of the item; in a run
    without workers, straight to this process's :class:`LiveRun`.
    """
    config = item.config
    message = snapshot(stats, children)
    if hasattr(config, "workerinput"):
        report = pytest.TestReport(item.nodeid, item.location, {}, "passed", None, "setup")
        # Travels to the controller with the report: pytest serialises its __dict__.
        report.__dict__[SNAPSHOT_KEY] = message.pack()
        item.ihook.pytest_runtest_logreport(report=report)
        return
    live = config.stash.get(LIVE_KEY, None)
    if live is not None:
        live.receive(item.nodeid, MAIN, message.stats, rss=message.rss_mb)
        show_status(config, live)


def worker_name(report: pytest.TestReport) -> str:
    """The xdist worker that sent ``report`` (``gw0``), or :data:`MAIN`."""
    node = getattr(report, "node", None)
    gateway = getattr(node, "gateway", None)
    return str(getattr(gateway, "id", None) or MAIN)


@dataclass
class WorkerFigures:
    """One worker's memory as its messages reported it."""

    rss_mb: float = 0.0
    peak_rss_mb: float = 0.0

    def saw(self, rss: float | None) -> None:
        if rss is not None:
            self.rss_mb = rss
            self.peak_rss_mb = max(self.peak_rss_mb, rss)


@dataclass
class LiveRun:
    """The controller's running total: items' latest statistics, repros written, report.

    ``run`` holds the report's fixed fields (backend, device, seed, ...);
    ``started`` is the run's start on ``clock``.
    """

    repro_dir: Path
    report: Path | None
    run: dict[str, Any]
    started: float
    clock: Any = time.perf_counter
    items: dict[str, RunStats] = field(default_factory=dict)
    #: Programs that killed their process, sent on their own (not in an item's figures).
    dead: RunStats = field(default_factory=RunStats)
    worker_of: dict[str, str] = field(default_factory=dict)
    workers: dict[str, WorkerFigures] = field(default_factory=dict)
    timeline: list[dict[str, Any]] = field(default_factory=list)
    progress: list[dict[str, Any]] = field(default_factory=list)
    #: Reports of items whose xdist worker died, waiting for the program it was checking.
    crashed: dict[str, tuple[pytest.TestReport, str]] = field(default_factory=dict)
    #: Dead programs that arrived with no crashed item to report them (an earlier run's).
    dead_elsewhere: list[str] = field(default_factory=list)
    _stored: dict[tuple[str, str], ReproResult] = field(default_factory=dict)
    #: What became of each failure's repro here, verified or not: what its text shows.
    _latest: dict[tuple[str, str], ReproResult] = field(default_factory=dict)
    _seen: set[str | tuple[str, ...]] = field(default_factory=set)
    _last_write: float | None = None
    _last_sample: float | None = None

    def receive(
        self,
        nodeid: str,
        worker: str,
        stats: RunStats,
        *,
        rss: float | None = None,
        final: bool = False,
    ) -> RunStats:
        """Fold in an item's statistics so far, replacing what it sent before;
        ``final`` when the item has ended (the report is then rewritten at once).

        Every verified repro they carry is written (once); the statistics
        come back with their failures' repro results as written.
        """
        stats.failures = [self.store(failure) for failure in stats.failures]
        self.items[nodeid] = stats
        self.worker_of[nodeid] = worker
        self.workers.setdefault(worker, WorkerFigures()).saw(rss)
        self._note_new_signatures(stats)
        self._sample()
        self.write(force=final)
        return stats

    def add_failure(self, nodeid: str, failure: Failure) -> Failure:
        """A failure that arrived on its own (a dead worker's program): written, counted
        with its item's statistics."""
        failure = self.store(failure)
        # Beside the items' statistics, which each item's next message replaces.
        self.dead.failures.append(failure)
        self.dead.count_hit(failure.signature)
        self._note_new_signatures(self.dead)
        self.write(force=True)
        return failure

    def store(self, failure: Failure) -> Failure:
        """Write the failure's verified repro, unless this run already wrote its program's."""
        from pytest_cgraph.recording.repro import store_repro

        key = (failure.signature, failure.case.source)
        if key not in self._stored:
            written = store_repro(failure, self.repro_dir)
            if written.repro is not None:
                self._latest[key] = written.repro
            if written.repro is None or not written.repro.verified:
                # Nothing written (not verified here, or the write failed):
                # a verified copy of the same program may still come.
                return written
            self._stored[key] = written.repro
        return failure.with_repro(self._stored[key])

    def as_stored(self, failure: Failure) -> Failure:
        """``failure`` with its repro as this run stored it (unchanged if never stored)."""
        repro = self._latest.get((failure.signature, failure.case.source))
        return failure.with_repro(repro) if repro is not None else failure

    def rendered(self, text: FailureText) -> str:
        """A failure's text, rendered from its failures as stored: the repro files as written."""
        return text.with_repros(self.as_stored).render()

    def total(self) -> RunStats:
        """Every item's latest statistics, merged."""
        total = RunStats()
        for stats in self.items.values():
            total.merge(stats)
        total.merge(self.dead)
        return total

    def write(self, *, force: bool = False, complete: bool = False) -> dict[str, Any] | None:
        """Rewrite the JSON report (atomically), at most every ``WRITE_SECONDS`` unless
        forced; the report's data when it was made (forced: always, with or without a
        JSON path, for the HTML page)."""
        now = self.clock()
        due = self._last_write is None or now - self._last_write >= WRITE_SECONDS
        if not force and (self.report is None or not due):
            return None
        self._last_write = now
        extra = {
            **self.run,
            "complete": complete,
            "cwd": str(Path.cwd()),
            "timeline": self.timeline,
            "progress": self.progress,
            "workers": self._worker_table(),
        }
        total, wall = self.total(), now - self.started
        if self.report is None:
            return report_data(total, wall, extra)
        return write_report(self.report, total, wall, extra)

    def _note_new_signatures(self, stats: RunStats) -> None:
        """Findings over time: when each new signature, and each known bug's registry
        entry (one broad signature is several known bugs), was first seen, and after
        how many programs."""
        seen_now: dict[str | tuple[str, ...], dict[str, Any]] = {
            signature: {"signature": signature, "new": True} for signature in stats.hits
        }
        for signature, repro in stats.known_hits:
            event = {"signature": signature, "new": False, "repro": repro}
            backends = stats.known_backends.get((signature, repro))
            if not backends:
                seen_now[(signature, repro)] = event
            # Told per backend: when each backend of a shared campaign first met it.
            for backend in backends or ():
                seen_now[(signature, repro, backend)] = {**event, "backend": backend}
        fresh = [key for key in seen_now if key not in self._seen]
        if not fresh:
            return
        programs = sum(item.programs for item in self.items.values())
        for key in fresh:
            self._seen.add(key)
            self.timeline.append(
                {
                    "seconds": round(self.clock() - self.started, 2),
                    "programs": programs,
                    **seen_now[key],
                }
            )

    def _sample(self) -> None:
        now = self.clock()
        if self._last_sample is not None and now - self._last_sample < SAMPLE_SECONDS:
            return
        self._last_sample = now
        total = self.total()
        self.progress.append(
            {
                "seconds": round(now - self.started, 2),
                "programs": total.programs,
                "drawn": total.drawn,
                "workers": self._worker_table(),
            }
        )
        if len(self.progress) > MAX_SAMPLES:
            self.progress = self.progress[::2]

    def _worker_table(self) -> dict[str, dict[str, float]]:
        table: dict[str, dict[str, float]] = {}
        for nodeid, stats in self.items.items():
            row = table.setdefault(self.worker_of.get(nodeid, MAIN), {"programs": 0, "seconds": 0})
            row["programs"] += stats.programs
            row["seconds"] = round(row["seconds"] + stats.seconds, 3)
        for worker, figures in self.workers.items():
            row = table.setdefault(worker, {"programs": 0, "seconds": 0})
            row["rss_mb"] = figures.rss_mb
            row["peak_rss_mb"] = figures.peak_rss_mb
        return table


def status_line(total: RunStats, elapsed: float) -> str:
    """The run so far in one line, for a terminal while items run for minutes."""
    new = len({failure.signature for failure in total.failures})
    rate = total.programs / elapsed if elapsed > 0 else 0.0
    return (
        f"cgraph: {total.programs} programs checked, {rate:.1f}/s, {new} new, "
        f"{len(total.known_bugs())} known, {elapsed:.0f} s"
    )


def show_status(config: pytest.Config, live: LiveRun) -> None:
    """Rewrite one status line (:func:`status_line`) as figures arrive, at the
    default verbosity on a terminal only: ``-v`` has its progress lines, and a
    log file or CI has no use for a line rewritten in place."""
    from pytest_cgraph.plugin.session import output_guard

    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or config.get_verbosity() != 0 or not reporter.isatty():
        return
    line = status_line(live.total(), live.clock() - live.started)
    with output_guard(config):
        # On a line of its own: the next result starts a new line below it.
        reporter.ensure_newline()
        reporter.rewrite(line, erase=True)
        reporter.flush()


def time_spread(live: LiveRun, box: float, wall: float) -> str:
    """How a time-boxed run spent its box: the campaign items' hunting times, and
    the run's own wall time (start-up, marked tests and recording included)."""
    seconds = sorted(
        stats.seconds for nodeid, stats in live.items.items() if nodeid.startswith("cgraph::")
    )
    workers = len({live.worker_of[nodeid] for nodeid in live.items}) or 1
    if not seconds:
        return f"time box {box:g} s: no campaign item ran; the run took {wall:.1f} s"
    return (
        f"time box {box:g} s over {len(seconds)} campaign item(s) on {workers} worker(s): "
        f"each hunted {seconds[0]:.1f}-{seconds[-1]:.1f} s; the run took {wall:.1f} s"
    )
