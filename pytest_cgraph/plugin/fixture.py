"""The ``cgraph`` fixture: :func:`pytest_cgraph.check_equivalent` with the session's options."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import pytest

from pytest_cgraph.plugin import session
from pytest_cgraph.plugin.options import OPTIONS_KEY, CgraphOptions
from pytest_cgraph.reporting.stats import RunStats

if TYPE_CHECKING:
    from pytest_cgraph.checking.runner import CheckReport
    from pytest_cgraph.errors import EquivalenceError
    from pytest_cgraph.failures import Case, Failure
    from pytest_cgraph.oracle.difference import Difference
    from pytest_cgraph.registry.entries import KnownBug

#: The family the run's summary counts the fixture's checks under.
FIXTURE_FAMILY = "fixture"


class CgraphChecker:
    """What the fixture gives a test: ``check(fn, *args, **overrides)``.

    Each check counts in the run's summary (``stats``), as a marked test's
    and a campaign program's do: a run of a user's own tests says what it checked.
    """

    def __init__(
        self,
        options: CgraphOptions,
        device: str,
        stats: RunStats | None = None,
        known: Callable[[Case, Difference], KnownBug | None] | None = None,
        item: pytest.Item | None = None,
    ) -> None:
        self.options = options
        self.device = device
        self.stats = stats if stats is not None else RunStats()
        #: Which known torch bug a difference is (the session's judge), if any.
        self.known = known
        #: The test checking: a failing check's repro is written for it.
        self.item = item
        self.reports: list[CheckReport] = []

    @contextmanager
    def _counted(
        self, failing: Callable[[EquivalenceError], Failure], iters: int | None
    ) -> Iterator[list[CheckReport]]:
        """Count one check: its program, its iterations (``None``: a source's own
        ``ITERS``, known once it has run), its time, and what it compiled and
        captured; a difference as the failure ``failing`` makes of it (its repro
        written)."""
        from pytest_cgraph.errors import EquivalenceError, InvalidProgram

        done: list[CheckReport] = []
        self.stats.count_program(FIXTURE_FAMILY, set(), iters=iters)
        started = time.perf_counter()
        try:
            yield done
        except InvalidProgram as invalid:
            self.stats.count_invalid(str(invalid))
            raise
        except EquivalenceError as error:
            self._report_failing(error, failing(error))
            raise
        finally:
            self.stats.seconds += time.perf_counter() - started
        for report in done:
            if iters is None:
                self.stats.count_iterations(report.iterations)
            self.stats.count_report(report)
            self.reports.append(report)

    def _report_failing(self, error: EquivalenceError, failure: Failure) -> None:
        """Count ``failure``; name the known torch bug it is, or list it as new; and
        make ``error`` end in its repro line, as a marked test's failure does.

        The error itself is raised on (a test may expect it): what pytest
        shows of it, when it fails the test, is the text attached here.
        """
        from pytest_cgraph.errors import ConfigurationError
        from pytest_cgraph.failures import FailureText, Outcome, Verdict

        known = None
        if self.known is not None:
            # Naming the bug replays the program up the ladder: if that fails,
            # the test still reports its own difference, unnamed. A registry
            # that cannot be read is said: unnamed for that reason, never quietly.
            try:
                known = self.known(failure.case, failure.difference)
            except ConfigurationError as unreadable:
                note = f"cgraph: no known bug could be named: {unreadable}"
                setattr(error, "__notes__", [*getattr(error, "__notes__", []), note])  # noqa: B010
            except Exception:  # the replay failed: the difference stands, unnamed
                known = None
        where = str(known.path) if known is not None else None
        self.stats.count_outcome(Outcome(Verdict.FAIL, failure.difference), where)
        if known is None:
            self.stats.failures.append(failure)
        else:
            # add_note's effect, on Python 3.10 too: pytest shows ``__notes__``.
            setattr(error, "__notes__", [*getattr(error, "__notes__", []), known.named()])  # noqa: B010
        if failure.repro is None:
            return
        verbose = self.item is not None and self.item.config.get_verbosity() > 0
        notes = "".join(f"\n{note}" for note in getattr(error, "__notes__", []))
        context = f"\n{error.context}" if error.context else ""
        words = f"{failure.difference.describe(verbose)}{context}{notes}\ncgraph "
        FailureText.ending_in_repro_line(words, failure).attach(error)

    def _unwritten(self, case: Case) -> Callable[[EquivalenceError], Failure]:
        """A failure of ``case`` with no repro: a check with no test to write it for."""
        from pytest_cgraph.failures import Failure

        return lambda error: Failure(case, error.difference)

    def check(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> CheckReport:
        """Check ``fn`` on ``args``; keywords override the session's backend, device, iters."""
        from pytest_cgraph.checking.runner import check_equivalent
        from pytest_cgraph.errors import ConfigurationError

        kwargs.setdefault("backend", self.options.backend)
        kwargs.setdefault("device", self.device)
        kwargs.setdefault("iters", self.options.iters)
        __tracebackhide__ = True
        try:
            with self._counted(self._recorded(fn, args, kwargs), kwargs["iters"]) as done:
                done.append(check_equivalent(fn, *args, **kwargs))
        except ConfigurationError as error:
            raise _without_frames(error) from None
        return done[0]

    def _recorded(
        self, fn: Callable[..., Any], args: tuple[Any, ...], settings: dict[str, Any]
    ) -> Callable[[EquivalenceError], Failure]:
        """How a failing check of ``fn(*args)`` becomes a failure: its call written out
        as a program (the marker's way), whose repro file is written and whose
        calls and layer tell the known bug it may be."""

        def failing(error: EquivalenceError) -> Failure:
            from pytest_cgraph.plugin.marker import FailedCall, record_call

            names = _parameter_names(fn, len(args))
            if self.item is None or names is None:
                # *args, keyword-only or a builtin: no program to write; the
                # difference is judged by its signature alone.
                return self._unwritten(self._case("", settings))(error)
            call = FailedCall(error, fn, names, list(args))
            iters = int(settings.get("iters") or self.options.iters)
            rtol, atol = settings.get("rtol"), settings.get("atol")
            backend = settings["backend"]
            return record_call(
                self.item, FIXTURE_FAMILY, call, backend, iters, rtol, atol, self.options.repro_dir
            )

        return failing

    def check_source(self, source: str, /, **kwargs: Any) -> CheckReport:
        """Check a program's source (a repro file's program) with the session's backend.

        The source follows the program-source protocol, so it can say what a
        function cannot: several separately compiled functions (``COMPILE``),
        an ambient grad mode (``GRAD_MODE``), arguments rebuilt per call.
        """
        from pytest_cgraph.checking.runner import check_source
        from pytest_cgraph.errors import ConfigurationError

        kwargs.setdefault("backend", self.options.backend)
        kwargs.setdefault("device", self.device)
        __tracebackhide__ = True
        failing = self._unwritten(self._case(source, kwargs))
        try:
            with self._counted(failing, kwargs.get("iters")) as done:
                done.append(check_source(source, **kwargs))
        except ConfigurationError as error:
            raise _without_frames(error) from None
        return done[0]

    def _case(self, source: str, settings: dict[str, Any]) -> Case:
        """The check as a :class:`Case`: what its failure is judged on (overrides applied)."""
        from pytest_cgraph.failures import Case

        iters = settings.get("iters") or self.options.iters
        return Case(source, str(settings["backend"]), str(settings["device"]), int(iters))


def _without_frames(error: BaseException) -> BaseException:
    """A check's :class:`~pytest_cgraph.errors.ConfigurationError` (a bad option, an
    argument that cannot be copied per side) without the frames that raised it.

    Its message is the whole story, in one line, as a marked test's is: the
    frames that raised it (the runner, the engine, the copying of arguments)
    say nothing of the test, and pytest would print each with its source.
    Raised from the check (whose frame pytest hides), it shows under the
    test's own line that called the check, and keeps its type for a test
    that expects it.
    """
    return error.with_traceback(None)


@pytest.fixture
def cgraph(request: pytest.FixtureRequest) -> CgraphChecker:
    """Check a function's compiled runs against eager, with this session's options."""
    config = request.config
    return CgraphChecker(
        config.stash[OPTIONS_KEY],
        session.device(config),
        session.stats_of(request.node),
        known=lambda case, difference: session.known_torch_bug(config, case, difference),
        item=request.node,
    )


def _parameter_names(fn: Callable[..., Any], count: int) -> list[str] | None:
    """``fn``'s names for ``count`` positional arguments, if each has one it can be
    passed by (what a program written out of the call passes them as)."""
    import inspect

    try:
        parameters = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    named = [p for p in parameters if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
    if len(named) != len(parameters) or len(named) != count:
        return None
    return [p.name for p in named]
