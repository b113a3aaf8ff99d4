"""The ``cgraph`` fixture: :func:`pytest_cgraph.check_equivalent` with the session's options."""

from __future__ import annotations

import contextlib
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
    from pytest_cgraph.failures import Case
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
    ) -> None:
        self.options = options
        self.device = device
        self.stats = stats if stats is not None else RunStats()
        #: Which known torch bug a difference is (the session's judge), if any.
        self.known = known
        self.reports: list[CheckReport] = []

    @contextmanager
    def _counted(self, case: Case) -> Iterator[list[CheckReport]]:
        """Count one check (``case``: its source, if any, and how it is checked): its
        program, its time, and what it compiled and captured."""
        from pytest_cgraph.errors import EquivalenceError, InvalidProgram

        done: list[CheckReport] = []
        self.stats.count_program(FIXTURE_FAMILY, set())
        started = time.perf_counter()
        try:
            yield done
        except InvalidProgram as invalid:
            self.stats.count_invalid(str(invalid))
            raise
        except EquivalenceError as error:
            self._count_failing(error, case)
            raise
        finally:
            self.stats.seconds += time.perf_counter() - started
        for report in done:
            self.stats.count_report(report)
            self.reports.append(report)

    def _count_failing(self, error: EquivalenceError, case: Case) -> None:
        """Count ``error``'s failing program; if it is a known torch bug, say so on it and
        count it as that bug seen again.

        ``check`` checks a function, not a program written out, so its
        difference is judged by its signature alone (one whose message names
        its bug); ``check_source`` has the program. The test fails either way.
        """
        from pytest_cgraph.failures import Outcome, Verdict

        difference = error.difference
        known = None
        if self.known is not None:
            # Naming the bug replays the program up the ladder (check_source): if
            # that fails, the test still reports its own difference, unnamed.
            with contextlib.suppress(Exception):
                known = self.known(case, difference)
        where = str(known.path) if known is not None else None
        self.stats.count_outcome(Outcome(Verdict.FAIL, difference), where)
        if known is not None:
            # add_note's effect, on Python 3.10 too: pytest shows ``__notes__``.
            setattr(error, "__notes__", [*getattr(error, "__notes__", []), known.named()])  # noqa: B010

    def check(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> CheckReport:
        """Check ``fn`` on ``args``; keywords override the session's backend, device, iters."""
        from pytest_cgraph.checking.runner import check_equivalent

        kwargs.setdefault("backend", self.options.backend)
        kwargs.setdefault("device", self.device)
        kwargs.setdefault("iters", self.options.iters)
        __tracebackhide__ = True
        with self._counted(self._case("", kwargs)) as done:
            done.append(check_equivalent(fn, *args, **kwargs))
        return done[0]

    def check_source(self, source: str, /, **kwargs: Any) -> CheckReport:
        """Check a program's source (a repro file's program) with the session's backend.

        The source follows the program-source protocol, so it can say what a
        function cannot: several separately compiled functions (``COMPILE``),
        an ambient grad mode (``GRAD_MODE``), arguments rebuilt per call.
        """
        from pytest_cgraph.checking.runner import check_source

        kwargs.setdefault("backend", self.options.backend)
        kwargs.setdefault("device", self.device)
        __tracebackhide__ = True
        with self._counted(self._case(source, kwargs)) as done:
            done.append(check_source(source, **kwargs))
        return done[0]

    def _case(self, source: str, settings: dict[str, Any]) -> Case:
        """The check as a :class:`Case`: what its failure is judged on (overrides applied)."""
        from pytest_cgraph.failures import Case

        iters = settings.get("iters") or self.options.iters
        return Case(source, str(settings["backend"]), str(settings["device"]), int(iters))


@pytest.fixture
def cgraph(request: pytest.FixtureRequest) -> CgraphChecker:
    """Check a function's compiled runs against eager, with this session's options."""
    config = request.config
    return CgraphChecker(
        config.stash[OPTIONS_KEY],
        session.device(config),
        session.stats_of(request.node),
        known=lambda case, difference: session.known_torch_bug(config, case, difference),
    )
