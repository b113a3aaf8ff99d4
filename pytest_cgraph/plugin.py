"""pytest hooks of pytest-cgraph, loaded through the ``pytest11`` entry point.

This module is imported by every pytest run in an environment where the
package is installed, so it imports neither torch nor hypothesis at module
level and never touches ``torch.cuda`` in the controller: the work happens
inside hooks, and only when ``--cgraph`` is given or a marked test runs.
"""

from __future__ import annotations

import fnmatch
import functools
import random
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_cgraph.marker import MARKER, MARKER_HELP, marker_settings, run_marked
from pytest_cgraph.options import (
    OPTIONS_KEY,
    CgraphOptions,
    add_options,
    read_options,
    session_device,
)
from pytest_cgraph.repro import MARKER_LINE
from pytest_cgraph.stats import REPORT_KEY, RunStats, summary_lines, write_report

if TYPE_CHECKING:
    from collections.abc import Callable, Generator

    from pytest_cgraph.runner import CheckReport

SEED_KEY = pytest.StashKey[int]()
STARTED_KEY = pytest.StashKey[float]()
MARKED_KEY = pytest.StashKey[dict[str, Any]]()
FIXED_KEY = "_cgraph_fixed"


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_cmdline_main(config: pytest.Config) -> None:
    # Validated here, not in pytest_configure: pytest turns a UsageError from
    # this hook into one "ERROR: ..." line and exit code 4, but reports one
    # from pytest_configure as an internal error with a traceback.
    options = read_options(config)
    if options.enabled:
        _check_backend_and_device(options)
        _check_repro_dir(options.repro_dir)


def _check_backend_and_device(options: CgraphOptions) -> None:
    """Fail the session at start, in one line, rather than in every test."""
    from pytest_cgraph.backends import resolve_backend, resolve_device
    from pytest_cgraph.errors import ConfigurationError

    try:
        resolve_backend(options.backend)
        resolve_device(options.device)
    except ConfigurationError as exc:
        raise pytest.UsageError(f"pytest-cgraph: {exc}") from None


def _check_repro_dir(directory: Path) -> None:
    """A campaign must be able to save what it finds: check before running anything.

    The directory itself is made only when there is something to write.
    """
    import os

    existing = directory.resolve()
    while not existing.exists():
        existing = existing.parent
    problem = (
        "is not a directory"
        if not existing.is_dir()
        else "is not writable"
        if not os.access(existing, os.W_OK | os.X_OK)
        else None
    )
    if problem:
        raise pytest.UsageError(
            f"--cgraph-repro-dir: {str(directory)!r} cannot be written ({existing} {problem}); "
            "give a writable directory"
        )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER_HELP)
    config.addinivalue_line("markers", "cgraph: an item of the pytest-cgraph fuzz campaign")
    options = read_options(config)
    config.stash[OPTIONS_KEY] = options
    config.stash[STARTED_KEY] = time.perf_counter()
    worker_input = getattr(config, "workerinput", None)
    if worker_input is not None and "cgraph_seed" in worker_input:
        config.stash[SEED_KEY] = worker_input["cgraph_seed"]
    else:
        # Chosen once, on the controller; xdist workers receive it.
        config.stash[SEED_KEY] = (
            options.seed if options.seed is not None else random.randrange(2**32)
        )
        if config.pluginmanager.hasplugin("xdist"):
            from pytest_cgraph._xdist import XdistHooks

            config.pluginmanager.register(
                XdistHooks(config, config.stash[SEED_KEY]), "cgraph-xdist"
            )


def pytest_report_header(config: pytest.Config) -> str | None:
    options = config.stash[OPTIONS_KEY]
    if not options.enabled:
        return None
    from pytest_cgraph.backends import resolve_device

    device = resolve_device(options.device)
    assert device is not None
    capture = (
        "capture=real (CUDA)"
        if device.type == "cuda"
        else "capture=skipped on cpu (torch's skip reasons are counted)"
    )
    seed = config.stash[SEED_KEY]
    return (
        f"cgraph: backend={options.backend} device={device} iters={options.iters} {capture} "
        f"seed={seed} (rerun with --cgraph-seed={seed})"
    )


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    # tryfirst: the campaign items must exist before -k and -m deselect.
    options = config.stash[OPTIONS_KEY]
    if not options.enabled:
        return
    from pytest_cgraph.campaign import make_items
    from pytest_cgraph.crashes import died_items

    items.extend(died_items(session, options))
    items.extend(make_items(session, options, config.stash[SEED_KEY]))


def pytest_unconfigure(config: pytest.Config) -> None:
    from pytest_cgraph.campaign import ISOLATED_KEY

    isolated = config.stash.get(ISOLATED_KEY, None)
    if isolated is not None:
        isolated.close()


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Module | None:
    # Repro files are named by signature, not test_*.py; collect them by
    # their first line so that `pytest <repro-dir>` runs them as tests. Only
    # when named on the command line (the dir or the file): a campaign run in
    # a project that commits its repro dir must not fail on its known bugs.
    # A file named itself is collected by pytest's python plugin already.
    if (
        file_path.suffix != ".py"
        or parent.session.isinitpath(file_path)
        or any(
            fnmatch.fnmatch(file_path.name, pattern)
            for pattern in parent.config.getini("python_files")
        )
        or not _named_on_command_line(parent.config, file_path)
        or not is_repro_file(file_path)
    ):
        return None
    return pytest.Module.from_parent(parent, path=file_path)


@functools.cache
def is_repro_file(path: Path) -> bool:
    """Whether ``path`` is a repro file this plugin wrote (its first line says so)."""
    try:
        with open(path, "rb") as stream:
            return stream.read(len(MARKER_LINE)) == MARKER_LINE.encode()
    except OSError:
        return False


def _named_on_command_line(config: pytest.Config, file_path: Path) -> bool:
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        return False
    root = config.invocation_params.dir
    for argument in config.args:
        given = (root / argument.split("::")[0]).resolve()
        if given != root.resolve() and (given == file_path or given in file_path.parents):
            return True
    return False


def pytest_runtest_setup(item: pytest.Item) -> None:
    settings = marker_settings(item)
    if settings is not None:
        item.stash[MARKED_KEY] = settings


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    settings = pyfuncitem.stash.get(MARKED_KEY, None)
    if settings is None:
        return None
    from pytest_cgraph.campaign import STATS_KEY

    __tracebackhide__ = True
    stats = pyfuncitem.stash.setdefault(STATS_KEY, RunStats())
    options = pyfuncitem.config.stash[OPTIONS_KEY]
    started = time.perf_counter()
    try:
        run_marked(pyfuncitem, settings, options, session_device(pyfuncitem.config), stats)
    finally:
        stats.seconds += time.perf_counter() - started
    return True


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when == "call" and report.passed and is_repro_file(item.path):
        # A repro that passes no longer reproduces: its bug is fixed.
        report.__dict__[FIXED_KEY] = str(item.path)
    if report.when == "call":
        from pytest_cgraph.campaign import STATS_KEY

        stats = item.stash.get(STATS_KEY, None)
        if stats is not None:
            # Travels to the xdist controller with the report (pytest
            # serialises report.__dict__), as Hypothesis's statistics do.
            report.__dict__[REPORT_KEY] = stats.to_json()
    return report


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        return
    fixed = sorted(
        {
            getattr(report, FIXED_KEY)
            for reports in terminalreporter.stats.values()
            for report in reports
            if hasattr(report, FIXED_KEY)
        }
    )
    for path in fixed:
        terminalreporter.write_line(f"cgraph: fixed: {path} no longer reproduces; retire it")
    options = config.stash[OPTIONS_KEY]
    if not options.enabled:
        return
    total = RunStats()
    for reports in terminalreporter.stats.values():
        for report in reports:
            data = getattr(report, REPORT_KEY, None)
            if data is not None:
                total.merge(RunStats.from_json(data))
    wall = time.perf_counter() - config.stash[STARTED_KEY]
    from pytest_cgraph.strategies.ops import OPS

    terminalreporter.section("cgraph summary")
    seed = config.stash[SEED_KEY]
    device = session_device(config)
    terminalreporter.write_line(
        f"backend {options.backend}, device {device}, {options.iters} iterations, seed {seed}"
    )
    for line in summary_lines(total, wall, [op.name for op in OPS]):
        terminalreporter.write_line(line)
    if options.report is not None:
        write_report(
            options.report,
            total,
            wall,
            {
                "backend": options.backend,
                "device": device,
                "iters": options.iters,
                "seed": seed,
            },
        )
        terminalreporter.write_line(f"JSON report: {options.report}")


class CgraphChecker:
    """The ``cgraph`` fixture: :func:`pytest_cgraph.check_equivalent` with session options."""

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


@pytest.fixture
def cgraph(request: pytest.FixtureRequest) -> CgraphChecker:
    """Check a function's compiled runs against eager, with this session's options."""
    return CgraphChecker(request.config.stash[OPTIONS_KEY], session_device(request.config))


__all__ = ["MARKER", "cgraph"]
