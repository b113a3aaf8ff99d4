"""One judge: what a checked program's outcome means, against what is already known.

A campaign item's hunt and the fuzz module's tests both check drawn
programs and must then say the same thing of the same outcome: the
program passed, eager rejected it, it is a known bug (a registry entry
claims it), a bug this run has already found, or a new bug. They ask this
judge, so the rules (and the order they are applied in) live in one place:
the harness failing is an error, never a verdict; a registry claim comes
before the run's own findings; ``strict`` sets the registries aside.

The first diverging layer is asked of ``layer_of`` only when it tells a
known bug from a new one (:meth:`Registry.match`), once per program and
signature: finding it replays the program up a ladder of backends.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable
from dataclasses import dataclass, field

from pytest_cgraph.errors import CgraphError
from pytest_cgraph.failures import Case, Failure, Outcome, Verdict
from pytest_cgraph.oracle.difference import Difference
from pytest_cgraph.registry.entries import KnownBug, Registry, program_ops, without_calls


class HarnessError(CgraphError, RuntimeError):
    """The harness itself failed while checking a program (not the program's doing)."""


class Ruling(enum.Enum):
    """What a checked program is, for the search that drew it."""

    PASSED = "passed"
    INVALID = "invalid"  # eager rejected it: no reference behaviour
    KNOWN = "known"  # a registry entry claims its difference
    FOUND = "found"  # this run has already found its bug
    NEW = "new"

    @property
    def differs(self) -> bool:
        """Compiled and eager differ (a bug, new or not)."""
        return self in (Ruling.KNOWN, Ruling.FOUND, Ruling.NEW)


@dataclass(frozen=True)
class Judgement:
    """A ruling and what it rests on: the outcome, the new failure or the known entry."""

    ruling: Ruling
    outcome: Outcome
    #: The new bug's failure (``NEW`` only).
    failure: Failure | None = None
    #: The registry entry that claims the difference (``KNOWN`` only).
    known: KnownBug | None = None


def _layer_is(rung: str) -> Callable[[], str | None]:
    """A ``layer_of`` for :meth:`Registry.match` that answers ``rung``."""
    return lambda: rung


def _nothing_found(case: Case, difference: Difference) -> bool:
    return False


@dataclass
class Judge:
    """Rules on checked programs against ``registry`` and, through ``found``, the run's own
    findings (``found(case, difference)``: true for a bug already found)."""

    registry: Registry
    layer_of: Callable[[Case, Difference], str | None]
    #: Every difference is new: the registries are not consulted.
    strict: bool = False
    found: Callable[[Case, Difference], bool] = _nothing_found
    #: Where a failure whose layer a lower rung leaves untold may lie (that rung
    #: and those above it): a bug registered at one of them whose calls the
    #: program makes is this one.
    masked_at: Callable[[Case, Difference], tuple[str, ...]] = lambda case, difference: ()
    #: Checks a program again (a campaign's own check): with it, a failure that a
    #: registered bug claims but for calls its forms never make is checked once
    #: more without the statements making them (:meth:`Registry.unexplained`).
    recheck: Callable[[Case], Outcome] | None = None
    _layers: dict[tuple[str, str], str | None] = field(default_factory=dict)

    def __call__(self, case: Case, outcome: Outcome) -> Judgement:
        if outcome.verdict is Verdict.ERROR:
            raise HarnessError(f"pytest-cgraph's check itself failed: {outcome.reason}")
        if outcome.verdict is Verdict.INVALID:
            return Judgement(Ruling.INVALID, outcome)
        difference = outcome.difference
        if difference is None:
            return Judgement(Ruling.PASSED, outcome)
        known = None if self.strict else self.known(case, difference)
        if known is not None:
            return Judgement(Ruling.KNOWN, outcome, known=known)
        if self.found(case, difference):
            return Judgement(Ruling.FOUND, outcome)
        return Judgement(Ruling.NEW, outcome, failure=Failure(case, difference))

    def known(self, case: Case, difference: Difference) -> KnownBug | None:
        """The registry entry that claims ``difference`` met by ``case``, if any."""
        if not case.source:
            # No program to replay or read calls from: known only by a signature
            # whose message names its bug alone (no calls or layer needed to tell).
            if self.registry.narrows(difference) or self.registry.needs_layer(difference):
                return None
            return self.registry.match(difference, lambda: None)
        ops = program_ops(case.source)
        known = self.registry.match(
            difference, lambda: self.layer(case, difference), ops, case.backend
        )
        # Only where the match asked the layer (some entry claims these calls)
        # and it was untold: otherwise the rung could claim nothing either.
        asked = (case.source, difference.signature)
        untold = known is None and asked in self._layers and self._layers[asked] is None
        for rung in self.masked_at(case, difference) if untold else ():
            # A bug registered where this one may lie, whose calls it makes.
            known = self.registry.match(difference, _layer_is(rung), ops)
            if known is not None:
                break
        if known is None:
            known = self._known_without_extra_calls(case, difference, ops)
        return known

    def _known_without_extra_calls(
        self, case: Case, difference: Difference, ops: frozenset[str]
    ) -> KnownBug | None:
        """The bug this failure is once the statements making calls no form of that bug
        makes are deleted, if it still fails the same way without them.

        A time-boxed campaign's shrink may stop before deleting them (it has
        ``shrink_seconds`` a failure, on a busy machine a few checks): a known bug
        met with a stray ``clamp_`` beside it is that bug, not a new one; one
        whose failure needs the call is another mechanism, and stays new.
        """
        if self.recheck is None:
            return None
        extra = self.registry.unexplained(difference, ops)
        pruned = without_calls(case.source, extra) if extra else None
        if pruned is None:
            return None
        smaller = dataclasses.replace(case, source=pruned)
        again = self.recheck(smaller).difference
        if again is None or again.signature != difference.signature:
            return None
        return self.registry.match(
            again, lambda: self.layer(smaller, again), program_ops(pruned), case.backend
        )

    def layer(self, case: Case, difference: Difference) -> str | None:
        """The first layer that shows ``difference``, found once per program and signature."""
        key = (case.source, difference.signature)
        if key not in self._layers:
            self._layers[key] = self.layer_of(case, difference)
        return self._layers[key]
