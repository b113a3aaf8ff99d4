"""The fuzz campaign: one pytest item per program family, each a Hypothesis search.

Each item draws ``--cgraph-examples`` programs of its family, checks each
against eager and counts invalid programs instead of failing on them. On a
difference Hypothesis shrinks the program and the item writes its repro
file; then it goes on hunting with a fresh seed until its examples are
spent, treating bugs it already has as passing, so one run reports many
distinct bugs. Bugs whose signature already has a repro file in the repro
dir are known: counted, not failures (unless ``--cgraph-strict``). An
item's seed is the campaign seed mixed with its node id, so a campaign
replays the same way whatever the number of xdist workers.
"""

from __future__ import annotations

import functools
import os
import time
import zlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest

from pytest_cgraph.options import CgraphOptions, session_device
from pytest_cgraph.stats import Failure, RunStats

if TYPE_CHECKING:
    from pytest_cgraph.checkers import InProcessChecker, IsolatedChecker
    from pytest_cgraph.compare import Difference
    from pytest_cgraph.guard import InFlightProgram

#: The session's isolated child (``--cgraph-isolate``), shared by its items.
ISOLATED_KEY = pytest.StashKey["IsolatedChecker"]()

STATS_KEY = pytest.StashKey[RunStats]()

#: Seconds of shrinking allowed after a round's first failure.
SHRINK_SECONDS = 20.0


class ProgramFailure(AssertionError):
    """A drawn program differs from eager; carries the program's source and size."""

    def __init__(
        self,
        difference: Difference,
        message: str,
        source: str,
        family: str,
        size: int,
        statements: int,
    ) -> None:
        super().__init__(f"{message}\n\nprogram ({family}):\n{source}")
        self.message = message
        self.difference = difference
        self.source = source
        self.family = family
        self.size = size
        self.statements = statements


class NewBugsFound(AssertionError):
    """An item found one or more new signatures; lists them all."""

    def __init__(
        self, family: str, found: list[tuple[ProgramFailure, str]], stalled: bool = False
    ) -> None:
        parts = [f"{len(found)} new failure signature(s) in {family} programs"]
        for number, (failure, repro_line) in enumerate(found, start=1):
            parts.append(f"\n[{number}] {failure}\n{repro_line}")
        if stalled:
            parts.append(
                f"\nstopped hunting early: the last {STALL_AFTER} programs hung or killed their "
                "process the same known way"
            )
        super().__init__("\n".join(parts))


class CampaignItem(pytest.Item):
    """``cgraph::<family>``: fuzz one program family."""

    def __init__(self, *, family: str, options: CgraphOptions, seed: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.family = family
        self.options = options
        self.campaign_seed = seed
        self.add_marker("cgraph")
        self.checker: InProcessChecker | IsolatedChecker

    @functools.cached_property
    def device(self) -> str:
        """The device this process checks on (worked out once, not per program)."""
        return session_device(self.config)

    @functools.cached_property
    def setup_modules(self) -> tuple[str, ...]:
        """The ``-p`` modules a child process or a repro must import first."""
        return plugin_modules(self.config)

    def inflight_program(self, source: str) -> InFlightProgram:
        """The in-flight record of ``source``: what survives this process's death."""
        from pytest_cgraph.guard import InFlightProgram

        return InFlightProgram(
            nodeid=self.nodeid,
            family=self.family,
            source=source,
            backend=self.options.backend,
            device=self.device,
            iters=self.options.iters,
            timeout=self.options.timeout,
            setup_modules=self.setup_modules,
            pid=os.getpid(),
            seed=self.campaign_seed,
        )

    def _make_checker(self) -> InProcessChecker | IsolatedChecker:
        from pytest_cgraph.checkers import InProcessChecker, IsolatedChecker
        from pytest_cgraph.guard import InFlight

        if not self.options.isolate:
            inflight = InFlight(self.options.repro_dir, self.nodeid)
            return InProcessChecker(inflight, self.options.timeout)
        if ISOLATED_KEY not in self.config.stash:
            self.config.stash[ISOLATED_KEY] = IsolatedChecker(
                self.setup_modules, self.options.timeout
            )
        return self.config.stash[ISOLATED_KEY]

    @property
    def item_seed(self) -> int:
        """Campaign seed mixed with the node id: stable whatever the worker layout."""
        return (self.campaign_seed ^ zlib.crc32(self.nodeid.encode())) & 0xFFFFFFFF

    def runtest(self) -> None:
        from pytest_cgraph.repro import known_signatures

        stats = self.stash.setdefault(STATS_KEY, RunStats())
        started = time.perf_counter()
        hunt = Hunt(known=known_signatures(self.options.repro_dir))
        found: list[tuple[ProgramFailure, str]] = []
        self.checker = self._make_checker()
        try:
            for round_number in range(1, MAX_ROUNDS + 1):
                hunt.first_failure = None
                try:
                    run_round(self, stats, hunt, round_number)
                except ProgramFailure as failure:
                    record, repro_line = self._record(failure, hunt)
                    stats.failures.append(record)
                    hunt.new[failure.difference.signature] = record
                    found.append((failure, repro_line))
                    if hunt.checked >= self.options.examples or hunt.stalled:
                        break
                    continue
                break
        finally:
            if not self.options.isolate:
                self.checker.close()
            stats.seconds += time.perf_counter() - started
            stats.count_hits(hunt.hits, hunt.known, set(hunt.new))
        if found:
            raise NewBugsFound(self.family, found, hunt.stalled)

    def _record(self, failure: ProgramFailure, hunt: Hunt) -> tuple[Failure, str]:
        """Write the repro of a shrunk failure and describe both for the summary."""
        from pytest_cgraph.repro import Finding, make_repro

        replay = self._replay(failure)
        if replay is not None:
            record = Failure.of(
                failure.difference,
                self.family,
                self.nodeid,
                statements=failure.statements,
                examples_to_failure=hunt.examples_to_failure,
                flaky=replay,
            )
            return record, (
                f"FLAKY: it failed once ({failure.difference.signature}), then the same "
                f"program {replay} when replayed; no repro file is written for a failure "
                "that does not reproduce (its program is above)"
            )
        finding = Finding(
            source=failure.source,
            difference=failure.difference,
            backend=self.options.backend,
            device=self.device,
            iters=self.options.iters,
            family=self.family,
            size=failure.size,
            nodeid=self.nodeid,
            seed=self.campaign_seed,
            setup_modules=self.setup_modules,
            timeout=self.options.timeout,
        )
        outcome = make_repro(finding, self.options.repro_dir)
        seconds = time.perf_counter() - hunt.first_failure if hunt.first_failure else None
        record = Failure.of(
            failure.difference,
            self.family,
            self.nodeid,
            repro=str(outcome.path) if outcome.path is not None else None,
            layer=outcome.layer,
            statements=failure.statements,
            examples_to_failure=hunt.examples_to_failure,
            seconds_to_repro=round(seconds, 2) if seconds is not None else None,
        )
        return record, outcome.line()

    def _replay(self, failure: ProgramFailure) -> str | None:
        """Check the shrunk program once more: how the replay went, if not the same failure.

        A hang or a dead process is replayed by its repro's subprocess check.
        """
        if failure.difference.ends_process:
            return None
        outcome = self.checker.check(
            failure.source,
            self.options.backend,
            self.device,
            self.options.iters,
            self.inflight_program(failure.source),
        )
        found = outcome.difference()
        if found is None:
            return "passed" if outcome.verdict == "pass" else f"was {outcome.verdict}"
        if found[0].signature != failure.difference.signature:
            return f"failed differently ({found[0].signature})"
        return None

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, NewBugsFound):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[str, int | None, str]:
        return "cgraph", None, f"cgraph campaign: {self.family} programs"


#: Rounds of search per item: each new signature starts a round.
MAX_ROUNDS = 20

#: Known hangs or process deaths in a row after which an item stops hunting.
STALL_AFTER = 3


@dataclass
class Hunt:
    """One item's search across rounds: what it knows, has found, and has checked."""

    known: dict[str, str]  # signature -> repro path, from the repro dir
    new: dict[str, Failure] = field(default_factory=dict)
    hits: dict[str, int] = field(default_factory=dict)  # signature -> failing programs seen
    checked: int = 0
    first_failure: float | None = None
    examples_to_failure: int | None = None
    ends_in_a_row: int = 0

    def is_known(self, signature: str, strict: bool) -> bool:
        """A failure to count and pass over: already a repro, or already found this run."""
        self.hits[signature] = self.hits.get(signature, 0) + 1
        return signature in self.new or (signature in self.known and not strict)

    def passed_over(self, difference: Difference) -> None:
        """A known failure was passed over: count hangs and deaths in a row."""
        self.ends_in_a_row = self.ends_in_a_row + 1 if difference.ends_process else 0

    def checked_one(self) -> None:
        """A program ran to a verdict of its own: the run of hangs is broken."""
        self.ends_in_a_row = 0

    @property
    def stalled(self) -> bool:
        """Known hangs or deaths on every recent program: each costs a time limit or a
        fresh process, so the item stops hunting rather than pay them ``examples`` times."""
        return self.ends_in_a_row >= STALL_AFTER


def make_items(session: pytest.Session, options: CgraphOptions, seed: int) -> list[CampaignItem]:
    """The campaign's items, one per selected family, in the families' order."""
    return [
        CampaignItem.from_parent(
            session,
            name=family,
            nodeid=f"cgraph::{family}",
            family=family,
            options=options,
            seed=seed,
        )
        for family in options.families
    ]


def plugin_modules(config: pytest.Config) -> tuple[str, ...]:
    """Modules loaded with ``-p``: a backend they register must be registered in a repro too.

    Only names importable as modules (``-p pytester`` names pytest's own
    ``_pytest.pytester``, which a repro must not import).
    """
    import importlib.util

    found = []
    for name in getattr(config.option, "plugins", None) or []:
        if name.startswith("no:"):
            continue
        try:
            if importlib.util.find_spec(name) is not None:
                found.append(name)
        except (ImportError, ValueError):
            continue
    return tuple(found)


def run_round(item: CampaignItem, stats: RunStats, hunt: Hunt, round_number: int) -> None:
    """One Hypothesis search: draw, check and (on a new difference) shrink programs."""
    from hypothesis import HealthCheck, Phase, given, reject, settings
    from hypothesis import seed as hypothesis_seed

    from pytest_cgraph.strategies import programs

    options = item.options
    device = item.device
    checker = item.checker
    # Shrinking re-checks many near-identical programs; each check compiles.
    # Outcomes are memoised by source, and once the shrink budget is spent
    # new candidates are rejected, so Hypothesis settles on the smallest
    # failure found so far (and can still replay it from the memo).
    outcomes: dict[str, ProgramFailure | None] = {}

    def fuzz(program: Any) -> None:
        source = program.render()
        if source not in outcomes:
            if (
                (
                    hunt.first_failure is not None
                    and time.perf_counter() - hunt.first_failure > SHRINK_SECONDS
                )
                or (hunt.first_failure is None and hunt.checked >= options.examples)
                or hunt.stalled
            ):
                reject()
            outcomes[source] = check(program, source)
        failure = outcomes[source]
        if failure is not None:
            if hunt.first_failure is None:
                hunt.first_failure = time.perf_counter()
                hunt.examples_to_failure = hunt.checked
            # Raised from this one place, outside any except block: Hypothesis
            # tells failures apart by where they are raised and their context.
            raise ProgramFailure(
                failure.difference,
                failure.message,
                source,
                item.family,
                failure.size,
                failure.statements,
            )

    def check(program: Any, source: str) -> ProgramFailure | None:
        hunt.checked += 1
        stats.count_program(item.family, program.all_features())
        outcome = checker.check(
            source, options.backend, device, options.iters, item.inflight_program(source)
        )
        if outcome.verdict in ("invalid", "pass"):
            hunt.checked_one()
        if outcome.verdict == "invalid":
            stats.count_invalid(outcome.value)
            return None
        if outcome.verdict == "pass":
            report = outcome.value
            stats.count_report(report.compiles, report.graphs_captured, report.skip_reasons)
            return None
        if outcome.verdict == "error":
            raise RuntimeError(f"pytest-cgraph's check itself failed: {outcome.message}")
        found = outcome.difference()
        assert found is not None
        difference, message = found
        if hunt.is_known(difference.signature, options.strict):
            hunt.passed_over(difference)
            return None
        return ProgramFailure(
            difference, message, source, item.family, program.size(), len(program.statements)
        )

    # One database key per item: the same function serves every family.
    fuzz._hypothesis_internal_add_digest = item.nodeid.encode()  # type: ignore[attr-defined]
    test = settings(
        max_examples=max(options.examples - hunt.checked, 1),
        deadline=None,
        report_multiple_bugs=False,
        # No "explain" phase: its line-coverage notes point into this harness.
        phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.filter_too_much,
            HealthCheck.data_too_large,
            HealthCheck.large_base_example,
        ],
    )(
        hypothesis_seed(item.item_seed + round_number - 1)(
            given(programs(families=(item.family,), iters=options.iters))(fuzz)
        )
    )
    test()
