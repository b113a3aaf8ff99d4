"""The fuzz campaign's pytest items: ``cgraph::<family>``, each a hunt (:mod:`.hunting.hunt`).

An item adapts a hunt to pytest: it gives the hunt a checker (here under a
time limit with an in-flight record, or in the session's isolated child),
a recorder that replays a shrunk failure and writes its repro, and the
session's registry of known bugs; it reports progress while it runs and
fails, in a screenful per bug, when the hunt found new ones. An item's seed
is the campaign seed mixed with its node id, so a campaign of a number of
examples replays the same way whatever the number of xdist workers. A
campaign over several backends (``--cgraph-backend cudagraphs,inductor``)
has an item per family and backend, ``cgraph::<family>[<backend>]``, whose
seed leaves the backend out: each backend checks the same programs, and a
run on that backend alone replays them. A
time-boxed campaign (``--cgraph-duration``) passes over a bug that an
earlier item of the same process found, so that it is shrunk and reported
once.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import pytest

from pytest_cgraph.checking.heap import long_lived_heap_frozen
from pytest_cgraph.errors import CgraphError
from pytest_cgraph.failures import (
    Case,
    Failure,
    FailureText,
    ReproResult,
    ReproStatus,
    Shown,
    Verdict,
)
from pytest_cgraph.hunting.database import build_database
from pytest_cgraph.hunting.hunt import STALL_AFTER, Budget, Hunt, items_left
from pytest_cgraph.plugin import session
from pytest_cgraph.plugin.items import CgraphItem
from pytest_cgraph.plugin.options import CgraphOptions

if TYPE_CHECKING:
    from pytest_cgraph.checking.checkers import Checker

#: Seconds between progress lines of a running item (with ``-v``).
PROGRESS_SECONDS = 15.0


class NewBugsFound(CgraphError, AssertionError):
    """An item found one or more new signatures; its report lists them all."""

    def __init__(self, family: str, found: list[Failure], stalled: bool, verbose: bool) -> None:
        signatures = len({failure.signature for failure in found})
        # Two bugs of one signature (reached through other hazards) are two failures;
        # the line's first words stay what scripts read.
        bugs = f" ({len(found)} bugs)" if len(found) != signatures else ""
        parts: list[str | Shown] = [
            f"{signatures} new failure signature(s) in {family} programs{bugs}"
        ]
        for number, failure in enumerate(found, start=1):
            parts += [f"\n\n[{number}] {failure.signature}\n", Shown(failure, verbose=verbose)]
        if stalled:
            parts.append(
                f"\n\nstopped hunting early: the last {STALL_AFTER} programs hung or killed their "
                "process the same known way"
            )
        text = FailureText(tuple(parts))
        super().__init__(text.render())
        text.attach(self)


class ControllerGone(BaseException):
    """The xdist controller died: the hunt stops. A ``BaseException``, so that
    Hypothesis lets it through rather than take it for a failing program."""


class CampaignItem(CgraphItem):
    """``cgraph::<family>`` (or one shard, ``cgraph::<family>[k]``; on one of several
    backends, ``cgraph::<family>[<backend>]`` or ``[<backend>-k]``): hunt for new bugs
    in one program family on one backend, within its share of the budget."""

    reported_as_text = (NewBugsFound,)

    def __init__(
        self,
        *,
        family: str,
        options: CgraphOptions,
        seed: int,
        budget: Budget,
        backend: str | None = None,
        seed_name: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.family = family
        self.backend = backend or options.backend
        #: What the item's seed is mixed from: its node id without the backend.
        self.seed_name = seed_name or self.nodeid
        self.options = options
        self.campaign_seed = seed
        self.budget = budget
        self.add_marker("cgraph")
        self._last_progress = 0.0
        self._started = self._last_snapshot = time.perf_counter()
        self._snapshot_new = 0
        # A popen worker's parent is its controller; on ssh hosts it is the
        # ssh server, which ends the worker's session itself.
        self._parent = os.getppid() if hasattr(self.config, "workerinput") else None

    @property
    def item_seed(self) -> int:
        """Campaign seed mixed with the node id (less the backend): stable whatever the
        worker layout, and the same programs on every backend."""
        return (self.campaign_seed ^ zlib.crc32(self.seed_name.encode())) & 0xFFFFFFFF

    def runtest(self) -> None:
        from pytest_cgraph.recording.repro import first_diverging_layer, masked_rungs
        from pytest_cgraph.strategies import programs

        session.share_cores(self.config)
        stats = session.stats_of(self)
        stats.campaign = True
        options = self.options
        with long_lived_heap_frozen(), self._checker() as checker:
            budget = self._budget(checker)
            # Hunting from here: a time box's checking child is up.
            started = time.perf_counter()
            hunt = Hunt(
                family=self.family,
                strategy=programs(
                    families=(self.family,),
                    iters=options.iters,
                    # On CUDA the transfers move tensors between host and device.
                    device=session.device(self.config),
                ),
                check=checker.check,
                case_of=self._case_of,
                record=lambda failure: self._record(failure, checker),
                registry=session.registry(self.config),
                # Time-boxed hunts, whose findings depend on the clock anyway,
                # pass over what another item of the run found first; a hunt
                # of a number of examples stays the same whatever the workers.
                found_in_run=(
                    session.found_in_run(self.config) if options.duration is not None else set()
                ),
                layer_of=first_diverging_layer,
                masked_at=masked_rungs,
                budget=budget,
                stats=stats,
                strict=options.strict,
                seed=self.item_seed,
                database_key=self.nodeid.encode(),
                database=(
                    "default" if options.database is None else build_database(options.database)
                ),
                progress=self._progress,
            )
            self._started = self._last_snapshot = started
            try:
                found = hunt.run()
            except ControllerGone:
                pytest.exit("pytest-cgraph: the xdist controller is gone; this worker stops", 1)
            finally:
                stats.seconds = time.perf_counter() - started
        if found:
            verbose = self.config.get_verbosity() > 0
            raise NewBugsFound(self.family, found, hunt.stalled, verbose)

    def _budget(self, checker: Checker) -> Budget:
        """The item's budget as it starts: in a time box, its part of the time then
        left (items before it on this worker may have run past their shares).

        The box's first item starts the checking child before it takes its
        share: the child's start (importing torch and the compile stack,
        seconds, more on a busy machine) is taken from the box, so that the
        box still bounds the run, but from the time all of this worker's items
        share, not from the first item's share alone, which it left a program
        or two of a short box.
        """
        if self.options.duration is None:
            return self.budget
        from pytest_cgraph.checking.checkers import IsolatedChecker

        boxed = dataclasses.replace(self.budget, deadline=session.campaign_deadline(self.config))
        if isinstance(checker, IsolatedChecker):
            checker.start(session.device(self.config))
        return boxed.time_left_share(time.time(), self._items_left())

    def _items_left(self) -> int:
        """The campaign items this worker still runs, this one included (an estimate
        under xdist: see :func:`~pytest_cgraph.hunting.hunt.items_left`)."""
        campaign = [
            item for item in getattr(self.session, "items", []) if isinstance(item, CampaignItem)
        ]
        if self not in campaign:
            return 1
        worker = getattr(self.config, "workerinput", None)
        workers = int(worker.get("workercount", 1) or 1) if worker is not None else 1
        return items_left(campaign.index(self), len(campaign), workers)

    @contextmanager
    def _checker(self) -> Iterator[Checker]:
        """The item's checker: the session's isolated child (closed with the session), or
        one in this process whose in-flight record goes when the item ends.

        A time-boxed hunt (``--cgraph-duration``) is isolated too: torch keeps
        memory per compile that ``torch._dynamo.reset()`` does not return, so
        a process checking for hours grows without bound; the child is replaced
        every ``RECYCLE_PROGRAMS`` programs, which bounds it.
        """
        from pytest_cgraph.checking.checkers import InProcessChecker
        from pytest_cgraph.checking.guard import InFlight

        if self.options.isolate or self.options.duration is not None:
            yield session.isolated_checker(self.config)
            return
        inflight = InFlight(self.options.repro_dir, self.nodeid)
        checker = InProcessChecker(inflight, self.options.timeout)
        try:
            yield checker
        finally:
            checker.close()

    def _case_of(self, program: Any, source: str) -> Case:
        import torch  # imported already, by share_cores

        return Case(
            source=source,
            backend=self.backend,
            device=session.device(self.config),
            iters=self.options.iters,
            family=self.family,
            nodeid=self.nodeid,
            seed=self.campaign_seed,
            size=program.size(),
            statements=len(program.statements),
            timeout=self.options.timeout or None,
            setup_modules=session.plugin_modules(self.config),
            # This worker's share of the cores: what its repro files replay with.
            threads=torch.get_num_threads(),
        )

    def _record(self, failure: Failure, checker: Checker) -> Failure:
        """Replay the shrunk failure once more, then write its repro.

        A failure whose replay passes (or fails otherwise) is flaky: no repro
        is written for what does not reproduce. A hang or a dead process is
        replayed by its repro's subprocess check instead.
        """
        from pytest_cgraph.recording.repro import verify_repro

        if not failure.difference.ends_process:
            replayed = checker.check(failure.case)
            again = replayed.difference
            if again is None or again.signature != failure.signature:
                how = (
                    "passed"
                    if replayed.verdict is Verdict.PASS
                    else f"failed differently ({again.signature})"
                    if again is not None
                    else f"was {replayed.verdict}"
                )
                return failure.with_repro(
                    ReproResult(
                        ReproStatus.FLAKY,
                        detail=f"it failed once, then the same program {how} when replayed",
                    )
                )
        # Written by the run's controller (this process, or xdist's), which
        # gets it with the item's statistics: see pytest_cgraph.plugin.live.
        return verify_repro(failure, self.options.repro_dir)

    def _progress(self, hunt: Hunt) -> None:
        """After each check: the item's statistics to the controller every
        ``SNAPSHOT_SECONDS`` and at once after a new failure; a line every
        ``PROGRESS_SECONDS`` with ``-v``, as an item can run for minutes."""
        if self._parent is not None and os.getppid() != self._parent:
            # The xdist controller that started this worker is gone (killed):
            # nobody would read what it finds, so it stops rather than hunt on
            # for the rest of its duration. Leaving the hunt closes the checker,
            # so no in-flight record is left to pass for a dead program.
            raise ControllerGone
        self._send_snapshot(hunt)
        now = time.monotonic()
        if self.config.get_verbosity() < 1 or now - self._last_progress < PROGRESS_SECONDS:
            return
        if not self._last_progress:
            self._last_progress = now
            return
        self._last_progress = now
        elapsed = now - hunt.started
        line = (
            f"{self.nodeid}: {hunt.drawn} drawn, {hunt.checks} checked, {len(hunt.new)} new, "
            f"{hunt.known_hits} known, {hunt.checks / max(elapsed, 1e-9):.1f} programs/s, "
            f"{elapsed:.0f} s"
        )
        write_progress(self.config, line)

    def _send_snapshot(self, hunt: Hunt) -> None:
        from pytest_cgraph.plugin.live import SNAPSHOT_SECONDS, send_snapshot

        now = time.perf_counter()
        if len(hunt.new) == self._snapshot_new and now - self._last_snapshot < SNAPSHOT_SECONDS:
            return
        self._snapshot_new, self._last_snapshot = len(hunt.new), now
        stats = session.stats_of(self)
        stats.seconds = now - self._started
        child = session.isolated_child_pid(self.config)
        send_snapshot(self, stats, [child] if child is not None else [])

    def description(self) -> str:
        if len(self.options.campaign_backends) > 1:
            return f"cgraph campaign: {self.family} programs on {self.backend}"
        return f"cgraph campaign: {self.family} programs"


def write_progress(config: pytest.Config, line: str) -> None:
    """Show ``line`` now, past pytest's output capture.

    In the controller it goes to the terminal reporter; in an xdist worker,
    whose terminal output pytest-xdist does not forward while a test runs,
    to the worker's stderr, which the worker inherits from the controller.
    """
    with session.output_guard(config):
        worker = getattr(config, "workerinput", None)
        if worker is not None:
            sys.stderr.write(f"[{worker.get('workerid', 'worker')}] {line}\n")
            sys.stderr.flush()
            return
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.ensure_newline()
            reporter.write_line(line)


def make_items(
    session_: pytest.Session, options: CgraphOptions, seed: int, *, workers: int = 1
) -> list[CampaignItem]:
    """The campaign's items in the families' order: one per family, or with
    ``--cgraph-shards N`` up to N per family, each with its share of the budget;
    and so for each backend named, in their order.

    A shard is named by its index, so its seed (mixed from the node id) and
    the programs it draws do not depend on how many workers run it.
    ``--cgraph-examples`` is each backend's: every backend checks as many
    programs, the same ones. ``--cgraph-duration`` boxes the whole campaign,
    in equal time per item, so each backend gets an equal share of it
    however slowly it compiles: ``workers`` run the items at once, so each
    is planned the box times the workers over the items (the whole box where
    there are no more items than workers). As it starts, an item hunts for
    its part of the time then left instead (:meth:`Budget.time_left_share`:
    one before it may have overrun), and none draws or shrinks past the
    box's end (:func:`pytest_cgraph.plugin.session.campaign_deadline`).
    """
    backends = options.campaign_backends
    budget = Budget(options.examples, options.duration, options.shrink_seconds)
    shares = budget.shares(options.shards)
    if options.duration is not None:
        count = len(options.families) * len(shares) * len(backends)
        each = options.duration * min(workers, count) / count
        shares = [dataclasses.replace(share, duration=each) for share in shares]
    items = []
    for family in options.families:
        for backend in backends:
            for index, share in enumerate(shares):
                shard = [str(index)] if options.shards > 1 else []
                labels = ([backend] if len(backends) > 1 else []) + shard
                name = family + (f"[{'-'.join(labels)}]" if labels else "")
                seed_name = family + (f"[{index}]" if shard else "")
                items.append(
                    CampaignItem.from_parent(
                        session_,
                        name=name,
                        nodeid=f"cgraph::{name}",
                        family=family,
                        options=options,
                        seed=seed,
                        budget=share,
                        backend=backend,
                        seed_name=f"cgraph::{seed_name}",
                    )
                )
    return items
