"""pytest hooks of pytest-cgraph, loaded through the ``pytest11`` entry point.

This module is imported by every pytest run in an environment where the
package is installed, so it imports neither torch nor hypothesis at module
level and never touches ``torch.cuda``: the work happens inside hooks and
fixtures, and only when asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from pytest_cgraph.options import CgraphOptions, add_options, read_options

if TYPE_CHECKING:
    from collections.abc import Callable

    from pytest_cgraph.runner import CheckReport

OPTIONS_KEY = pytest.StashKey[CgraphOptions]()


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_cmdline_main(config: pytest.Config) -> None:
    # Validated here, not in pytest_configure: pytest turns a UsageError from
    # this hook into one "ERROR: ..." line and exit code 4, but reports one
    # from pytest_configure as an internal error with a traceback.
    options = read_options(config)
    if options.enabled:
        _check_backend_and_device(options)


def pytest_configure(config: pytest.Config) -> None:
    config.stash[OPTIONS_KEY] = read_options(config)


def _check_backend_and_device(options: CgraphOptions) -> None:
    """Fail the session at start, in one line, rather than in every test."""
    from pytest_cgraph.backends import resolve_backend, resolve_device
    from pytest_cgraph.errors import ConfigurationError

    try:
        resolve_backend(options.backend)
        resolve_device(options.device)
    except ConfigurationError as exc:
        raise pytest.UsageError(f"pytest-cgraph: {exc}") from None


def pytest_report_header(config: pytest.Config) -> str | None:
    options = config.stash.get(OPTIONS_KEY, None)
    if options is None or not options.enabled:
        return None
    from pytest_cgraph.backends import resolve_device

    device = resolve_device(options.device)
    assert device is not None
    capture = (
        "capture=real (CUDA)"
        if device.type == "cuda"
        else "capture=skipped on cpu (torch's skip reasons are counted)"
    )
    return f"cgraph: backend={options.backend} device={device} iters={options.iters} {capture}"


class CgraphChecker:
    """The ``cgraph`` fixture: :func:`pytest_cgraph.check_equivalent` with session options."""

    def __init__(self, options: CgraphOptions) -> None:
        self.options = options
        self.reports: list[CheckReport] = []

    def check(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> CheckReport:
        """Check ``fn`` on ``args``; keywords override the session's backend, device, iters."""
        from pytest_cgraph.runner import check_equivalent

        kwargs.setdefault("backend", self.options.backend)
        kwargs.setdefault("device", self.options.device)
        kwargs.setdefault("iters", self.options.iters)
        __tracebackhide__ = True
        report = check_equivalent(fn, *args, **kwargs)
        self.reports.append(report)
        return report


@pytest.fixture
def cgraph(request: pytest.FixtureRequest) -> CgraphChecker:
    """Check a function's compiled runs against eager, with this session's options."""
    return CgraphChecker(request.config.stash[OPTIONS_KEY])
