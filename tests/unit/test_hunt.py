"""The hunt on its own: rounds, memo, budgets, stall, known and new, with a checker double.

Programs here are numbers: a program's source says its number, its case
carries it as ``size``, and a checker double decides how each number fails.
Hypothesis shrinks a failing number towards 0, so a shrunk failure is the
smallest number that fails that way.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import strategies as st
from hypothesis.database import InMemoryExampleDatabase

from pytest_cgraph.failures import Case, Failure, Outcome, ReproResult, ReproStatus, Verdict
from pytest_cgraph.hunting import hunt as hunt_module
from pytest_cgraph.hunting.findings import found_key
from pytest_cgraph.hunting.hunt import STALL_AFTER, Budget, Hunt
from pytest_cgraph.oracle.difference import Difference, Kind, Place, Role
from pytest_cgraph.registry.entries import KnownBug, Registry, program_ops
from pytest_cgraph.registry.judge import HarnessError
from pytest_cgraph.reporting.stats import RunStats

WRONG_OUTPUT = Difference(Kind.VALUE, 2, Place(Role.OUTPUT, index=0))


@dataclass(frozen=True)
class Numbered:
    """A drawn program as the hunt sees one: rendered, sized, featured."""

    number: int

    @property
    def statements(self) -> list[str]:
        return ["return"]

    def render(self) -> str:
        return f"def program():\n    return {self.number}\n"

    def size(self) -> int:
        return self.number

    def all_features(self) -> set[str]:
        return {"add"}


def numbers(high: int = 1000) -> st.SearchStrategy[Numbered]:
    return st.integers(0, high).map(Numbered)


@dataclass
class Recorder:
    """Records a shrunk failure as the item would, once per call."""

    recorded: list[Failure] = field(default_factory=list)

    def __call__(self, failure: Failure) -> Failure:
        self.recorded.append(failure)
        return failure.with_repro(ReproResult(ReproStatus.WRITTEN, f"/r/{failure.signature}.py"))


def case_of(program: Numbered, source: str) -> Case:
    return Case(source, "aot_eager", "cpu", 5, family="numbers", size=program.size())


def make_hunt(
    verdict: Callable[[int], Outcome],
    *,
    strategy: st.SearchStrategy[Numbered] | None = None,
    examples: int = 60,
    registry: Registry | None = None,
    layers: list[str] | None = None,
    **options: object,
) -> tuple[Hunt, Recorder]:
    recorder = Recorder()

    def layer_of(case: Case, difference: Difference) -> str | None:
        if layers is not None:
            layers.append(case.source)
        return None

    hunt = Hunt(
        family="numbers",
        strategy=numbers() if strategy is None else strategy,
        check=lambda case: verdict(case.size),
        case_of=case_of,
        record=recorder,
        registry=registry or Registry(),
        layer_of=layer_of,
        budget=Budget(examples, shrink_seconds=5.0),
        stats=RunStats(),
        **{"database": None, **options},  # type: ignore[arg-type]
    )
    return hunt, recorder


def wrong_from_ten(number: int) -> Outcome:
    return Outcome(Verdict.FAIL, WRONG_OUTPUT) if number >= 10 else Outcome(Verdict.PASS)


def test_a_new_failure_is_shrunk_recorded_once_and_later_hits_pass_as_found() -> None:
    hunt, recorder = make_hunt(wrong_from_ten, examples=80)
    found = hunt.run()
    assert [failure.case.size for failure in found] == [10]  # shrunk to the smallest
    assert recorder.recorded == [Failure(found[0].case, WRONG_OUTPUT)]
    (failure,) = found
    assert failure.repro is not None and failure.repro.path == "/r/value-output.py"
    assert failure.examples_to_failure is not None and failure.seconds_to_repro is not None
    assert hunt.stats.failures == found
    assert hunt.stats.hits["value-output"] >= 1 + hunt.known_hits
    assert hunt.drawn <= 80 and hunt.stats.drawn == hunt.drawn
    assert hunt.stats.programs == hunt.checks >= hunt.drawn
    assert not hunt.stalled


def test_each_source_is_checked_once_a_round() -> None:
    checked: list[int] = []

    def counting(number: int) -> Outcome:
        checked.append(number)
        return Outcome(Verdict.PASS)

    hunt, _ = make_hunt(counting, strategy=st.just(Numbered(5)))
    assert hunt.run() == []
    assert checked == [5] and hunt.checks == 1 and hunt.drawn == 1


def test_the_budget_counts_drawn_programs_and_ends_the_hunt() -> None:
    hunt, _ = make_hunt(lambda number: Outcome(Verdict.PASS), examples=25)
    assert hunt.run() == []
    assert (hunt.rounds == 1 and hunt.drawn <= 25 and hunt.spent) or hunt.drawn < 25


def test_a_duration_budget_stops_on_the_clock_whatever_the_examples() -> None:
    ticks = itertools.count()
    hunt, _ = make_hunt(lambda number: Outcome(Verdict.PASS), clock=lambda: float(next(ticks)))
    hunt.budget = Budget(examples=1, duration=30.0)
    assert hunt.run() == []
    assert 1 < hunt.drawn < 30  # past the example count, stopped by the clock
    assert hunt.spent


def test_a_known_bug_is_counted_never_recorded_and_its_layer_asked_once_per_program() -> None:
    registry = Registry([KnownBug("value-output", None, Path("known/value-output.py"))])
    asked: list[str] = []
    hunt, recorder = make_hunt(wrong_from_ten, registry=registry, layers=asked)
    assert hunt.run() == []
    assert recorder.recorded == []
    assert hunt.known_hits > 0
    assert set(hunt.stats.known_hits) == {("value-output", "known/value-output.py")}
    assert len(asked) == len(set(asked)) == hunt.known_hits  # memoised per source


def test_strict_hunts_report_known_bugs_as_new() -> None:
    registry = Registry([KnownBug("value-output", None, Path("known/value-output.py"))])
    hunt, recorder = make_hunt(wrong_from_ten, registry=registry, strict=True)
    assert [failure.signature for failure in hunt.run()] == ["value-output"]
    assert len(recorder.recorded) == 1 and not hunt.stats.known_hits


def test_known_hangs_in_a_row_stall_the_hunt() -> None:
    registry = Registry([KnownBug("timeout-program", None, Path("known/timeout-program.py"))])
    hunt, recorder = make_hunt(lambda number: Outcome.timed_out(1.0), registry=registry)
    assert hunt.run() == []
    assert hunt.stalled and hunt.drawn == STALL_AFTER and recorder.recorded == []


def test_a_pass_between_known_hangs_resets_the_stall() -> None:
    registry = Registry([KnownBug("timeout-program", None, Path("known/timeout-program.py"))])

    calls = itertools.count()

    def every_other(number: int) -> Outcome:
        return Outcome.timed_out(1.0) if next(calls) % 2 else Outcome(Verdict.PASS)

    hunt, _ = make_hunt(every_other, registry=registry, examples=30)
    hunt.run()
    assert not hunt.stalled and hunt.drawn > STALL_AFTER


def test_invalid_programs_and_passes_are_counted() -> None:
    def odd_invalid(number: int) -> Outcome:
        if number % 2:
            return Outcome(Verdict.INVALID, reason="RuntimeError: odd")
        return Outcome(Verdict.PASS)

    hunt, _ = make_hunt(odd_invalid, examples=30)
    assert hunt.run() == []
    assert hunt.stats.invalid > 0
    assert hunt.stats.invalid_reasons == {"RuntimeError: odd": hunt.stats.invalid}


def test_a_harness_error_ends_the_hunt_as_an_error_not_a_failure() -> None:
    hunt, recorder = make_hunt(lambda number: Outcome(Verdict.ERROR, reason="pipe broke"))
    with pytest.raises(HarnessError, match="pipe broke"):
        hunt.run()
    assert recorder.recorded == []


def test_a_hunt_stops_after_max_new_signatures(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hunt_module, "MAX_NEW", 3)

    def each_its_own(number: int) -> Outcome:
        difference = Difference(Kind.VALUE, 1, Place(Role.OUTPUT), facet=str(number))
        return Outcome(Verdict.FAIL, difference)

    hunt, recorder = make_hunt(each_its_own, examples=500)
    found = hunt.run()
    assert len({failure.signature for failure in found}) == len(found) == 3
    assert len(recorder.recorded) == 3 and hunt.drawn < 500


def saved(database: InMemoryExampleDatabase) -> set[bytes]:
    """What Hypothesis replays first: the primary corpus, not the secondary or Pareto keys."""
    return {
        value
        for key, values in database.data.items()
        if not key.endswith((b".secondary", b".pareto"))
        for value in values
    }


def test_a_failure_stays_saved_while_later_rounds_pass_over_it() -> None:
    database = InMemoryExampleDatabase()
    first, _ = make_hunt(wrong_from_ten, examples=80, database=database, database_key=b"item")
    assert [failure.case.size for failure in first.run()] == [10]
    # The rounds after the failure replayed it and passed over it as found.
    assert first.rounds >= 2 and len(saved(database)) == 1

    # Another run (another seed, one program): the saved failure is its first program.
    again, _ = make_hunt(
        wrong_from_ten, examples=1, database=database, database_key=b"item", seed=99
    )
    (failure,) = again.run()
    assert (failure.case.size, failure.examples_to_failure, again.drawn) == (10, 1, 1)


def test_a_known_failure_stays_saved_and_one_that_now_passes_is_deleted() -> None:
    database = InMemoryExampleDatabase()
    first, _ = make_hunt(wrong_from_ten, examples=80, database=database, database_key=b"item")
    first.run()
    known = Registry([KnownBug("value-output", None, Path("known/value-output.py"))])
    knowing, _ = make_hunt(
        wrong_from_ten, examples=5, registry=known, database=database, database_key=b"item"
    )
    assert knowing.run() == [] and knowing.known_hits >= 1
    assert len(saved(database)) == 1  # known is not fixed: other machines still replay it

    fixed, _ = make_hunt(
        lambda number: Outcome(Verdict.PASS), examples=5, database=database, database_key=b"item"
    )
    assert fixed.run() == []
    assert saved(database) == set()


def test_later_rounds_do_not_replay_what_the_hunt_found_and_stall_on_it() -> None:
    # Numbers from 950 up kill the process checking them: rare when drawn, but
    # the saved failure and the programs it shrank from would be replayed at
    # the start of every round, and three deaths in a row stall a hunt.
    from pytest_cgraph.failures import death

    def dies_from_950(number: int) -> Outcome:
        if number >= 950:
            return Outcome(Verdict.FAIL, death("killed by SIGSEGV"))
        return Outcome(Verdict.PASS)

    clock = itertools.count(step=0.01)
    hunt, recorder = make_hunt(
        dies_from_950, database=InMemoryExampleDatabase(), clock=lambda: next(clock), seed=3
    )
    hunt.budget = Budget(1, duration=30.0, shrink_seconds=5.0)
    hunt.run()
    assert len(recorder.recorded) == 1 and hunt.rounds > 2
    assert not hunt.stalled


def test_a_failure_an_earlier_hunt_of_the_process_found_is_passed_over_not_shrunk_again() -> None:
    found_in_run: set[str] = set()
    first, first_recorder = make_hunt(wrong_from_ten, examples=40, found_in_run=found_in_run)
    assert [failure.signature for failure in first.run()] == ["value-output"]
    # The signature, and the hazard classes of its minimal program (none here).
    assert found_in_run == {found_key("value-output", ())}
    second, second_recorder = make_hunt(wrong_from_ten, examples=40, found_in_run=found_in_run)
    assert second.run() == []
    assert second_recorder.recorded == [] and second.known_hits > 0
    # Not shared, the second hunt shrinks and reports the same bug again.
    alone, alone_recorder = make_hunt(wrong_from_ten, examples=40)
    assert [failure.signature for failure in alone.run()] == ["value-output"]
    assert len(first_recorder.recorded) == len(alone_recorder.recorded) == 1


def wrong_from_ten_otherwise_from_fifty(number: int) -> Outcome:
    """Two bugs: from 50 up one way, from 10 to 49 another."""
    if number >= 50:
        return Outcome(Verdict.FAIL, Difference(Kind.MUTATION, 2, Place(Role.ARGUMENT, index=0)))
    return wrong_from_ten(number)


def test_a_bug_met_while_shrinking_another_is_set_aside_and_shrunk_in_turn() -> None:
    # Hypothesis alone would slip from the first failure drawn (most numbers
    # are 50 or more) to the smaller bug below 50 and never report the first.
    seen: list[int] = []

    def verdict(number: int) -> Outcome:
        seen.append(number)
        return wrong_from_ten_otherwise_from_fifty(number)

    database = InMemoryExampleDatabase()
    hunt, recorder = make_hunt(
        verdict,
        strategy=numbers(10**6),
        examples=100,
        seed=4,
        database=database,
        database_key=b"item",
    )
    found = hunt.run()
    assert sorted((failure.signature, failure.case.size) for failure in found) == [
        ("mutation-argument", 50),
        ("value-output", 10),
    ]
    first_failing = next(number for number in seen if number >= 10)
    assert first_failing >= 50, "the seed must draw the larger bug first"
    assert found[0].signature == "mutation-argument"  # the first found is shrunk first
    assert hunt.set_aside == {} and len(recorder.recorded) == 2
    assert len(saved(database)) == 2  # both kept for the next run to replay first


def test_a_bug_still_set_aside_when_the_examples_are_spent_is_shrunk_and_reported() -> None:
    # Two examples: the second program drawn fails (most numbers are 50 or
    # more), and its shrink meets the bug below 50 once both are drawn.
    drawn: list[int] = []

    def verdict(number: int) -> Outcome:
        drawn.append(number)
        return wrong_from_ten_otherwise_from_fifty(number)

    hunt, recorder = make_hunt(verdict, strategy=numbers(10**6), examples=2, seed=4)
    found = hunt.run()
    assert drawn[0] < 10 <= 50 <= drawn[1], "the seed must draw the larger bug second"
    assert [(failure.signature, failure.case.size) for failure in found] == [
        ("mutation-argument", 50),
        ("value-output", 10),  # shrunk: the budget counts drawn programs only
    ]
    assert all(failure.shrunk for failure in found)
    assert hunt.drawn == 2 and hunt.set_aside == {} and len(recorder.recorded) == 2


def test_a_bug_still_set_aside_when_the_time_box_ends_is_reported_as_it_was_met() -> None:
    now = [0.0]
    checked: list[int] = []

    def verdict(number: int) -> Outcome:
        checked.append(number)
        now[0] += 1.0
        return wrong_from_ten_otherwise_from_fifty(number)

    hunt, recorder = make_hunt(verdict, strategy=numbers(10**6), seed=4, clock=lambda: now[0])
    hunt.budget = Budget(1000, duration=3.0, shrink_seconds=20.0)
    found = hunt.run()
    first_failing = next(number for number in checked if number >= 10)
    assert first_failing >= 50, "the seed must draw the larger bug first"
    assert [failure.signature for failure in found] == ["mutation-argument", "value-output"]
    first, met = found
    assert first.shrunk and first.case.size == 50
    # Not shrunk (one replay of the program set aside): 10 <= size < 50.
    assert not met.shrunk and 10 <= met.case.size < 50
    assert checked.count(met.case.size) == 2 and checked[-1] == met.case.size
    assert "not shrunk: the time box ended before its turn" in met.report()
    assert met.to_json()["shrunk"] is False and Failure.from_json(met.to_json()) == met
    assert now[0] - 3.0 <= len(checked) and len(recorder.recorded) == 2


@dataclass(frozen=True)
class Listed(Numbered):
    """A program of as many statements as its number's hundreds (plus one)."""

    @property
    def statements(self) -> list[str]:
        return ["pass"] * (self.number // 100 + 1)


@pytest.mark.parametrize("stall", [True, False], ids=["stall", "no_stall"])
def test_a_shrink_ends_once_its_statement_count_stops_falling(
    stall: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Numbers from 10 fail. A shrink first drops statements (hundreds),
    # then polishes the number within its last hundred, at 10 s a check.
    if not stall:
        monkeypatch.setattr(hunt_module, "STATEMENTS_STALL", 1.0)
    now = [0.0]
    checks: list[int] = []

    def verdict(number: int) -> Outcome:
        checks.append(number)
        now[0] += 10.0 if len(Listed(number).statements) == 1 else 1.0
        return wrong_from_ten(number)

    hunt, _ = make_hunt(
        verdict,
        strategy=st.integers(0, 10**6).map(Listed),  # type: ignore[arg-type]
        seed=4,
        clock=lambda: now[0],
    )
    hunt.budget = Budget(30, shrink_seconds=100.0)
    (failure,) = hunt.run()
    first = next(number for number in checks if number >= 10)
    assert first >= 100, "the seed must draw a program of several statements"
    assert len(Listed(failure.case.size).statements) == 1  # the statements went
    if stall:
        # Polishing ended 40 s (four checks) after the statement count last fell.
        assert failure.case.size > 10
    else:
        assert failure.case.size == 10


def test_the_runs_deadline_ends_drawing_whatever_the_items_share() -> None:
    ticks = itertools.count()
    wall = iter(range(1000, 2000))
    hunt, _ = make_hunt(
        lambda number: Outcome(Verdict.PASS),
        clock=lambda: float(next(ticks)),
        wall_clock=lambda: float(next(wall)),
    )
    # The item's own share would last 500 ticks; the run's box ends at 1010.
    hunt.budget = Budget(examples=1, duration=500.0, deadline=1010.0)
    assert hunt.run() == []
    assert 0 < hunt.drawn < 12
    assert hunt.past_deadline and hunt.spent


def test_the_runs_deadline_ends_a_shrink_with_the_smallest_program_so_far() -> None:
    wall = [0.0]

    def late_once_failing(number: int) -> Outcome:
        if number >= 10:
            wall[0] = 100.0  # the box ends as the first failure is met
        return wrong_from_ten(number)

    hunt, _ = make_hunt(late_once_failing, wall_clock=lambda: wall[0], examples=200)
    hunt.budget = Budget(200, shrink_seconds=1000.0, deadline=50.0)
    found = hunt.run()
    assert [failure.signature for failure in found] == ["value-output"]
    assert hunt.drawn < 200  # nothing drawn past the box


@dataclass(frozen=True)
class TwoHazards(Numbered):
    """Below 500 the program writes in place; from 500 up it draws random numbers."""

    def render(self) -> str:
        call = "x.add_(1)" if self.number < 500 else "x = x + torch.rand_like(x)"
        return f"def program(x):\n    {call}\n    return x * {self.number}\n"


def test_one_signature_through_two_hazards_is_two_bugs_through_other_ops_of_one_it_is_one() -> None:
    """As a later run tells its repro files apart by hazard, the run itself does: a
    wrong value after an in-place write and one after a random draw are two bugs,
    each shrunk and recorded once; neither is shrunk into the other."""
    hunt, recorder = make_hunt(
        wrong_from_ten,
        strategy=st.integers(0, 1000).map(TwoHazards),
        examples=300,
        seed=2,
    )
    found = hunt.run()
    assert sorted(failure.case.size for failure in found) == [10, 500]
    assert len(recorder.recorded) == 2
    calls = sorted(sorted(program_ops(failure.case.source)) for failure in found)
    assert calls == [["add", "mul", "rand_like"], ["add_", "mul"]]
    assert hunt.known_hits > 0  # later programs of each, through other numbers


def run_worker(
    box: float, items: int, overrun: Callable[[int], float]
) -> list[tuple[float, float]]:
    """A worker's items run one after another in a box starting at 0: each hunts its
    share and then, while shrinking or verifying what it found, ``overrun(index)``
    seconds more, cut at its own end (its budget's deadline), as a hunt is. The
    (start, time hunted) of each item."""
    equal = Budget(1, duration=box / items, deadline=box)
    now, spans = 0.0, []
    for index in range(items):
        budget = equal.time_left_share(now, items - index)
        assert budget.duration is not None and budget.deadline is not None
        assert budget.deadline <= box  # nothing past the box's end
        ended = min(now + budget.duration + overrun(index), budget.deadline)
        spans.append((now, ended - now))
        now = max(ended, now)
    return spans


def test_an_item_that_overruns_its_share_leaves_the_items_after_it_a_floor() -> None:
    """The first items of a 90 s box over 8 items each shrink a bug for 30 s past
    their share: before, the last items started past the box's end and drew
    nothing. Each share is now an equal part of the time left, and each item
    stops early enough that those after it still get half an equal share."""
    equal = 90 / 8
    spans = run_worker(90.0, 8, overrun=lambda index: 30.0 if index < 6 else 0.0)
    assert all(hunted >= hunt_module.FLOOR_SHARE * equal - 1e-9 for _, hunted in spans), spans
    assert spans[-1][0] < 90.0 and sum(hunted for _, hunted in spans) <= 90.0 + 1e-9


def test_time_an_item_leaves_unused_goes_to_the_items_after_it() -> None:
    """An item that ends early (too many new bugs, a stall) leaves its time to the
    rest: the last item hunts for what is left, not for its planned share."""
    spans = run_worker(80.0, 4, overrun=lambda index: -20.0 if index == 0 else 0.0)
    assert spans[0][1] == 0.0  # ended at once
    assert [hunted for _, hunted in spans[1:]] == pytest.approx([80 / 3] * 3)
    assert spans[-1][0] + spans[-1][1] == pytest.approx(80.0)


def test_an_item_started_past_the_box_still_checks_one_program() -> None:
    """However late it starts (its worker was given more items than its share, or a
    check outran every reserve), an item checks a program of its family: a family
    the summary shows with 0 programs was never tested at all."""
    wall = [2000.0]
    hunt, _ = make_hunt(lambda number: Outcome(Verdict.PASS), wall_clock=lambda: wall[0])
    hunt.budget = Budget(1, duration=10.0, deadline=1000.0).time_left_share(wall[0], 3)
    assert hunt.run() == []
    assert hunt.drawn == 1 and hunt.checks == 1 and hunt.spent


@pytest.mark.parametrize(
    ("index", "count", "workers", "left"),
    [(0, 8, 1, 8), (7, 8, 1, 1), (0, 8, 2, 4), (1, 8, 2, 4), (6, 8, 2, 1), (7, 8, 2, 1),
     (0, 5, 2, 3), (1, 5, 2, 2), (4, 5, 2, 1), (0, 3, 8, 1)],
)  # fmt: skip
def test_the_items_a_worker_has_left_are_its_deal_of_those_after_this_one(
    index: int, count: int, workers: int, left: int
) -> None:
    """xdist deals the items out in order, one at a time, so a worker starting item
    ``index`` of ``count`` runs about one in ``workers`` of those after it."""
    assert hunt_module.items_left(index, count, workers) == left
