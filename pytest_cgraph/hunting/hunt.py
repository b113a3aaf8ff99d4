"""The hunt: one campaign item's search for new bugs, round after round.

A round is one Hypothesis search over the item's programs. Each program is
checked once (outcomes are memoised by source); a failure that a registry
already knows, or that this hunt or an earlier hunt of the same process
already found, is counted and passed over at once, so known bugs cost a
check and nothing more, and a bug is shrunk and reported once. A new failure is
raised into Hypothesis, which shrinks it (within ``shrink_seconds``); the
shrunk failure is recorded (its repro written) and a new round starts with
a fresh seed, until the budget is spent. A round shrinks one bug: a program
its shrinking meets that fails in another new way is set aside and is the
first program of a later round (see :mod:`pytest_cgraph.hunting.set_aside`). Those
still set aside when the budget is spent are reported all the same: shrunk,
as the budget counts drawn programs; with a duration, as they were met (a
replay each), since shrinking them would overrun the time box.

The budget counts *drawn* programs (``--cgraph-examples``), not shrink
steps, or, with a duration, wall time. Nothing here knows pytest or files:
the item gives the hunt a checker, a recorder and a registry, which keeps
the hunt's bookkeeping testable on its own.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable, MutableSet
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pytest_cgraph.errors import CgraphError
from pytest_cgraph.failures import Case, Failure, Outcome
from pytest_cgraph.hunting.findings import found_claims, found_key, found_signature
from pytest_cgraph.oracle.difference import Difference
from pytest_cgraph.registry.entries import Registry, program_ops
from pytest_cgraph.registry.judge import Judge, Ruling
from pytest_cgraph.registry.own_backend import is_own_backend, own_key
from pytest_cgraph.reporting.stats import RunStats
from pytest_cgraph.strategies.seeded_draws import without_local_constants

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

    from pytest_cgraph.hunting.keep_failing import KeepFailing

#: New signatures one item may find before it stops: past this, the
#: backend is broken in ways better read from the first ones.
MAX_NEW = 20

#: Known hangs or process deaths in a row after which an item stops hunting:
#: each costs a time limit or a fresh process.
STALL_AFTER = 3

#: Programs per round when hunting for a duration (each round has its own seed).
ROUND_EXAMPLES = 100

#: Share of ``shrink_seconds`` after which a shrink whose statement count has
#: stopped falling ends. The reader of a repro sees its statements; past that
#: point Hypothesis mostly polishes values and shapes. Measured on 21 shrinks
#: of a campaign on ``cudagraphs``: it saves a third of their time and one
#: ended a statement longer (6 rather than 5).
STATEMENTS_STALL = 0.4

#: Part of its equal share of a time box (the box times the workers over the
#: items) that each item is sure of, however long the items before it on its
#: worker ran: an item stops drawing and shrinking early enough to leave this
#: much to each item after it. A 90 s box over 8 items on one worker lost its
#: last two families (0 programs drawn) to the first items' shrinks, repro
#: checks and first compiles, which ran past their shares.
FLOOR_SHARE = 0.5


@dataclass(frozen=True)
class Budget:
    """How long an item hunts.

    ``examples`` drawn programs, or, when ``duration`` (seconds) is set,
    until that much time has passed, whatever ``examples`` says.
    Shrinking one failure may take ``shrink_seconds`` more, or less: it
    ends once its statement count has not fallen for ``stall_seconds``.
    A time-boxed run gives each item a share of the box and the box's
    ``deadline``, which ends drawing and shrinking alike.
    """

    examples: int
    duration: float | None = None
    shrink_seconds: float = 20.0
    #: When this item's time ends (``time.time()``): no drawing nor shrinking
    #: past it, whatever its share says. The run's time box's end, less what
    #: :meth:`time_left_share` keeps for the items after it.
    deadline: float | None = None

    @property
    def stall_seconds(self) -> float:
        """How long a shrink may go on without its statement count falling."""
        return STATEMENTS_STALL * self.shrink_seconds

    def shares(self, count: int) -> list[Budget]:
        """This budget split over ``count`` items (``--cgraph-shards``).

        The examples are dealt out so that they add up to this budget's,
        and a duration is divided, so that sharding a family spreads its
        work over more workers without adding to it. Shares with nothing
        to draw (fewer examples than shards) are left out. Each share may
        still spend ``shrink_seconds`` on each failure it finds.
        """
        if self.duration is not None:
            return [dataclasses.replace(self, duration=self.duration / count) for _ in range(count)]
        whole, extra = divmod(self.examples, count)
        counts = [whole + (1 if index < extra else 0) for index in range(count)]
        return [dataclasses.replace(self, examples=number) for number in counts if number]

    def time_left_share(self, now: float, left: int) -> Budget:
        """The budget of an item starting at ``now`` (``time.time()``), with ``left``
        items of its worker still to run, itself included.

        This budget's ``duration`` is an item's equal share of the box and its
        ``deadline`` the box's end. The item hunts for an equal part of the
        time left, not for its planned share: an item that ran past its share
        (a shrink, a repro's verification, a first compile) takes that time
        from every item after it, not from the last ones alone, and time an
        item leaves unused goes to the rest. Its own end comes early enough
        to leave ``FLOOR_SHARE`` of an equal share to each item after it, so a
        shrink cannot eat their time; nothing runs past the box's end.
        """
        assert self.duration is not None and self.deadline is not None
        left = max(left, 1)
        share = max(self.deadline - now, 0.0) / left
        kept = FLOOR_SHARE * self.duration * (left - 1)
        end = min(max(now + share, self.deadline - kept), self.deadline)
        return dataclasses.replace(self, duration=share, deadline=end)


def items_left(index: int, count: int, workers: int) -> int:
    """How many campaign items a worker still runs as it starts item ``index`` of the
    run's ``count``, itself included.

    One process runs them all, in order. xdist deals the items out in order
    to whichever worker is free, so a worker runs about one in ``workers`` of
    those after this one: an estimate, which the time left corrects at each
    item's start (:meth:`Budget.time_left_share`).
    """
    return 1 + max(count - index - 1, 0) // max(workers, 1)


class BudgetSpent(BaseException):
    """Ends a round from inside Hypothesis when the budget is spent.

    A ``BaseException``: Hypothesis lets it through untouched (it is not a
    failure to shrink), as it does ``KeyboardInterrupt``.
    """


class ProgramFailure(CgraphError, AssertionError):
    """A drawn program fails in a new way: raised into Hypothesis, which shrinks it."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.difference.headline())
        self.failure = failure


@dataclass
class Hunt:
    """One item's search: its budget, what it knows, what it has found and checked.

    ``check`` checks a case; ``case_of(program, source)`` makes the case of
    a drawn program; ``layer_of(case, difference)`` finds the first layer
    that shows the difference (asked only when that tells a known bug from a
    new one); ``record``
    turns a shrunk failure into a recorded one (replayed, repro written).
    """

    family: str
    strategy: SearchStrategy[Any]
    check: Callable[[Case], Outcome]
    case_of: Callable[[Any, str], Case]
    record: Callable[[Failure], Failure]
    registry: Registry
    layer_of: Callable[[Case, Difference], str | None]
    budget: Budget
    stats: RunStats
    strict: bool = False
    seed: int = 0
    database_key: bytes = b""
    database: Any = "default"
    progress: Callable[[Hunt], None] = lambda hunt: None
    #: Where a failure whose layer is untold may lie (:attr:`Judge.masked_at`).
    masked_at: Callable[[Case, Difference], tuple[str, ...]] = lambda case, difference: ()
    clock: Callable[[], float] = time.monotonic
    #: The clock of ``budget.deadline``: wall time, shared by every worker.
    wall_clock: Callable[[], float] = time.time

    #: Bugs found so far (:func:`pytest_cgraph.hunting.findings.found_key`: a signature and
    #: what a program must make to be that bug): this hunt's, and, where the item
    #: shares the set of its run, other hunts' too (a bug several families reach
    #: is shrunk and reported once).
    found_in_run: MutableSet[str] = field(default_factory=set)

    new: dict[str, Failure] = field(default_factory=dict)
    #: New signatures met while another was being shrunk: the choices that
    #: drew the first program failing so, to start a later round from.
    set_aside: dict[str, bytes] = field(default_factory=dict)
    #: True once the budget is spent and the rounds left report what was set aside.
    finishing: bool = False
    drawn: int = 0
    checks: int = 0
    known_hits: int = 0
    ends_in_a_row: int = 0
    rounds: int = 0
    started: float = 0.0
    _first_failure: float | None = None
    _drawn_at_failure: int | None = None
    _differing: set[str] = field(default_factory=set)
    _shrinking: str | None = None
    _fewest_statements: int = 0
    _fewer_since: float = 0.0

    @property
    def stalled(self) -> bool:
        """Known hangs or deaths on every recent program: stop rather than pay for more."""
        return self.ends_in_a_row >= STALL_AFTER

    @property
    def spent(self) -> bool:
        """Nothing more to draw: the budget is used, too many new bugs, or stalled.

        Not before the first round has drawn a program, however late the item
        started: a family of a time-boxed run that checked nothing was not
        tested at all, and one program costs a check (and, if it fails in a new
        way, its recording: its shrink ends at once).
        """
        owed = self.drawn == 0 and self.rounds <= 1 and not self.stalled
        return self._budget_used() and not owed

    def _budget_used(self) -> bool:
        if self.stalled or len(self.new) >= MAX_NEW or self.past_deadline:
            return True
        if self.budget.duration is not None:
            return self.clock() - self.started >= self.budget.duration
        return self.drawn >= self.budget.examples

    @property
    def past_deadline(self) -> bool:
        """This item's time in the run's box is over (see :attr:`Budget.deadline`)."""
        deadline = self.budget.deadline
        return deadline is not None and self.wall_clock() >= deadline

    def run(self) -> list[Failure]:
        """Hunt until the budget is spent; the new failures, recorded, in order found."""
        self.started = self.clock()
        while not self.spent:
            self.rounds += 1
            try:
                finished = self._round(self._next_set_aside())
            except ProgramFailure as raised:
                self._found(raised.failure)
                continue
            except BudgetSpent:
                break
            if finished and self.budget.duration is None:
                break  # Hypothesis used the round's examples: the budget is spent
        self._finish_set_aside()
        return list(self.new.values())

    def _finish_set_aside(self) -> None:
        """Report the bugs still set aside when the budget ran out, rather than lose them.

        Each has a round that draws nothing new: it replays the program set
        aside and, on an examples budget (which counts drawn programs, not
        shrink steps), shrinks it. On a duration it is reported as it was met,
        a program from the middle of another bug's shrink: shrinking it
        would overrun the time box by up to ``shrink_seconds`` a bug.
        Not when the hunt stopped for too many new bugs or a stall.
        """
        self.finishing = True
        while self.set_aside and not self.stalled and len(self.new) < MAX_NEW:
            start_from = self._next_set_aside()
            if start_from is None:
                break
            self.rounds += 1
            try:
                self._round(start_from)
            except ProgramFailure as raised:
                self._found(raised.failure)
            except BudgetSpent:  # pragma: no cover - a finishing round draws nothing
                break

    def _found(self, failure: Failure) -> None:
        if self.finishing and self.budget.duration is not None:
            failure = dataclasses.replace(failure, shrunk=False)
        recorded = self.record(failure)
        seconds = self.clock() - self._first_failure if self._first_failure is not None else None
        recorded = dataclasses.replace(
            recorded,
            examples_to_failure=self._drawn_at_failure,
            seconds_to_repro=round(seconds, 2) if seconds is not None else None,
        )
        key = found_key(*self._found_as(failure.difference, failure.case))
        self.new[key] = recorded
        self.found_in_run.add(key)
        self.stats.failures.append(recorded)
        self.progress(self)

    def _next_set_aside(self) -> bytes | None:
        """The program to start the next round from: one set aside whose bug is still new."""
        while self.set_aside:
            signature = next(iter(self.set_aside))
            choices = self.set_aside.pop(signature)
            if not found_signature(self.found_in_run, signature):
                return choices
        return None

    def _set_aside(self, failure: Failure) -> None:
        """Keep a program failing in a new way other than the one being shrunk."""
        from pytest_cgraph.hunting.set_aside import current_choices

        signature = failure.signature
        if signature in self.set_aside or found_signature(self.found_in_run, signature):
            return
        if len(self.set_aside) + len(self.new) >= MAX_NEW:
            return
        choices = current_choices()
        if choices is not None:
            self.set_aside[signature] = choices

    def _round(self, start_from: bytes | None = None) -> bool:
        """One Hypothesis search; True if it ran to its end without a new failure.

        ``start_from``: the choices of a program set aside, replayed first.
        """
        from hypothesis import HealthCheck, Verbosity, given, reject, settings
        from hypothesis import seed as hypothesis_seed

        self._first_failure = None
        self._drawn_at_failure = None
        self._differing = set()
        self._shrinking = None
        outcomes: dict[str, Failure | None] = {}
        kept = self._kept_database()

        def fuzz(program: Any) -> None:
            source = program.render()
            if source not in outcomes:
                if self._first_failure is not None:
                    # Shrinking: once its time is spent, candidates are
                    # rejected and Hypothesis settles on the smallest so far.
                    if self._shrink_spent():
                        reject()
                elif self.spent and not self.finishing:
                    raise BudgetSpent
                drawn = self._first_failure is None and not self.finishing
                outcomes[source] = self._check(program, source, drawn)
            if kept is not None:
                kept.last_failed = source in self._differing
            failure = outcomes[source]
            if failure is not None and self._shrinking not in (None, failure.signature):
                # Another new bug: raised, Hypothesis would slip to it if smaller.
                self._set_aside(failure)
                failure = None
            if failure is not None:
                self._shrinking = failure.signature
                statements = len(program.statements)
                if self._first_failure is None:
                    self._first_failure = self.clock()
                    self._drawn_at_failure = self.drawn
                    self._fewest_statements, self._fewer_since = statements, self._first_failure
                elif statements < self._fewest_statements:
                    self._fewest_statements, self._fewer_since = statements, self.clock()
                # Raised from this one place, outside any except block:
                # Hypothesis tells failures apart by where they are raised.
                raise ProgramFailure(failure)

        # One database key per item: the same function serves every item.
        fuzz._hypothesis_internal_add_digest = self.database_key  # type: ignore[attr-defined]
        remaining = (
            ROUND_EXAMPLES
            if self.budget.duration is not None
            else self.budget.examples - self.drawn
        )
        options: dict[str, Any] = (
            {} if self.database == "default" else {"database": kept or self.database}
        )
        replay = self.rounds == 1
        if start_from is not None:
            from pytest_cgraph.hunting.set_aside import StartFrom

            saved_to = options.get("database", settings().database)
            options["database"] = StartFrom(start_from, saved_to)
            replay = True
        search: Callable[[], None] = settings(
            max_examples=max(remaining, 1),
            deadline=None,
            report_multiple_bugs=False,
            verbosity=Verbosity.quiet,  # the item reports the failure itself
            # No "explain" phase: its line-coverage notes point into this harness.
            # Saved failures are replayed by the first round only: a later
            # round would replay what this hunt has just found (and the
            # programs it shrank from), paying a check, or a fresh process for
            # a crash, for each, and a few crashes in a row stall the hunt.
            # A round starting from a program set aside replays that alone.
            phases=self._phases(replay),
            suppress_health_check=list(HealthCheck),
            **options,
        )(hypothesis_seed(self.seed + self.rounds - 1)(given(self.strategy)(fuzz)))
        with without_local_constants():
            search()
        return True

    def _phases(self, replay: bool) -> list[Any]:
        """What a round does: replay saved programs (``replay``), draw, shrink.

        A finishing round only replays its program set aside, and shrinks
        it unless the hunt has a duration (see :meth:`_finish_set_aside`).
        """
        from hypothesis import Phase

        if self.finishing:
            return [Phase.reuse, *([] if self.budget.duration is not None else [Phase.shrink])]
        return [
            *([Phase.explicit, Phase.reuse] if replay else [Phase.explicit]),
            Phase.generate,
            Phase.target,
            Phase.shrink,
        ]

    def _shrink_spent(self) -> bool:
        """The shrink has had its time, or its statement count stopped falling a while ago."""
        now = self.clock()
        assert self._first_failure is not None
        return (
            now - self._first_failure > self.budget.shrink_seconds
            or now - self._fewer_since > self.budget.stall_seconds
            or self.past_deadline
        )

    def _kept_database(self) -> KeepFailing | None:
        """A given database, wrapped so that a replayed failure stays saved while it fails.

        Without the wrapper, the round after a failure replays it, passes
        over it as found, and Hypothesis deletes it: the next run would not
        replay it first. Hypothesis's default database is used as it is.
        """
        if self.database in ("default", None):
            return None
        from pytest_cgraph.hunting.keep_failing import KeepFailing

        return KeepFailing(self.database)

    def _check(self, program: Any, source: str, drawn: bool) -> Failure | None:
        """Check one program: a new failure, or ``None`` (passed, invalid, or known)."""
        case = self.case_of(program, source)
        self.checks += 1
        self.drawn += int(drawn)
        self.stats.count_program(
            self.family, program.all_features(), drawn, case.backend, case.iters
        )
        outcome = self.check(case)
        try:
            return self._judge(case, outcome)
        finally:
            self.progress(self)

    @functools.cached_property
    def judge(self) -> Judge:
        """The one judge of checked programs, against the registries and this run's findings."""
        return Judge(
            self.registry,
            self.layer_of,
            self.strict,
            found=self._found_in_run,
            masked_at=self.masked_at,
            recheck=self.check,
        )

    def _judge(self, case: Case, outcome: Outcome) -> Failure | None:
        """A new failure, or ``None``: passed, invalid, or one already known or found."""
        judgement = self.judge(case, outcome)
        known = judgement.known
        self.stats.count_outcome(
            outcome, str(known.path) if known is not None else None, case.backend
        )
        if judgement.ruling.differs:
            self._differing.add(case.source)
        if judgement.ruling in (Ruling.KNOWN, Ruling.FOUND):
            self.known_hits += 1
            ended = outcome.difference is not None and outcome.difference.ends_process
            self.ends_in_a_row = self.ends_in_a_row + 1 if ended else 0
        else:
            self.ends_in_a_row = 0
        return judgement.failure

    def _found_in_run(self, case: Case, difference: Difference) -> bool:
        """This run has found ``difference``'s bug already (this hunt or, shared, another)."""
        return found_claims(self.found_in_run, *self._found_as(difference, case))

    def _found_as(self, difference: Difference, case: Case) -> tuple[str, frozenset[str]]:
        """The signature and calls this run files a failure under: its own, or (a
        backend of one's own that no torch layer shows it on) its face, whatever its
        calls (:mod:`pytest_cgraph.registry.own_backend`)."""
        if (
            is_own_backend(case.backend)
            and not difference.message
            and not difference.ends_process
            and self.judge.layer(case, difference) is None
        ):
            return own_key(difference.signature), frozenset()
        return difference.signature, self._claiming_calls(difference, case)

    @staticmethod
    def _claiming_calls(difference: Difference, case: Case) -> frozenset[str]:
        """The calls that tell this run's findings of a signature apart: the program's,
        where the signature is broad; none where a crash's message names its bug (as
        the registry tells them apart, :meth:`Registry.narrows`)."""
        if difference.message and not difference.ends_process:
            return frozenset()
        return program_ops(case.source)
