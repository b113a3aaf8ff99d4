"""The ``cgraph`` fixture: :func:`pytest_cgraph.check_equivalent` with the session's options."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from pytest_cgraph import session
from pytest_cgraph.options import OPTIONS_KEY, CgraphOptions

if TYPE_CHECKING:
    from pytest_cgraph.runner import CheckReport


class CgraphChecker:
    """What the fixture gives a test: ``check(fn, *args, **overrides)``."""

    def __init__(self, options: CgraphOptions, device: str) -> None:
        self.options = options
        self.device = device
        self.reports: list[CheckReport] = []

    def check(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> CheckReport:
        """Check ``fn`` on ``args``; keywords override the session's backend, device, iters."""
        from pytest_cgraph.runner import check_equivalent

        kwargs.setdefault("backend", self.options.backend)
        kwargs.setdefault("device", self.device)
        kwargs.setdefault("iters", self.options.iters)
        __tracebackhide__ = True
        report = check_equivalent(fn, *args, **kwargs)
        self.reports.append(report)
        return report

    def check_source(self, source: str, /, **kwargs: Any) -> CheckReport:
        """Check a program's source (a repro file's program) with the session's backend.

        The source follows the program-source protocol, so it can say what a
        function cannot: several separately compiled functions (``COMPILE``),
        an ambient grad mode (``GRAD_MODE``), arguments rebuilt per call.
        """
        from pytest_cgraph.runner import check_source

        kwargs.setdefault("backend", self.options.backend)
        kwargs.setdefault("device", self.device)
        __tracebackhide__ = True
        report = check_source(source, **kwargs)
        self.reports.append(report)
        return report


@pytest.fixture
def cgraph(request: pytest.FixtureRequest) -> CgraphChecker:
    """Check a function's compiled runs against eager, with this session's options."""
    return CgraphChecker(request.config.stash[OPTIONS_KEY], session.device(request.config))
