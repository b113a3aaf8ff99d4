"""pytest hooks of pytest-cgraph, loaded through the ``pytest11`` entry point.

This module is imported by every pytest run in an environment where the
package is installed, so it imports neither torch nor hypothesis at module
level, nothing platform-specific, and never touches ``torch.cuda`` in the
controller: the work happens inside hooks, and only when ``--cgraph`` is
given or a marked test runs. The hooks only adapt: the campaign, the
marker, the registry and the statistics live in their own modules.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import random
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_cgraph.hunting.database import parse_database
from pytest_cgraph.plugin import session
from pytest_cgraph.plugin.fixture import cgraph
from pytest_cgraph.plugin.marker import MARKER, MARKER_HELP, MarkerSettings, run_marked
from pytest_cgraph.plugin.options import OPTIONS_KEY, CgraphOptions, add_options, read_options
from pytest_cgraph.plugin.wire import (
    DEAD_KEY,
    REPORT_KEY,
    SNAPSHOT_KEY,
    ItemMessage,
    ending_the_run_on_mismatch,
)
from pytest_cgraph.registry.entries import cached_is_repro_file
from pytest_cgraph.reporting.stats import RunStats, iterations_words, summary_lines

if TYPE_CHECKING:
    from collections.abc import Generator

    from pytest_cgraph.plugin.live import LiveRun

SEED_KEY = pytest.StashKey[int]()
STARTED_KEY = pytest.StashKey[float]()
MARKED_KEY = pytest.StashKey[MarkerSettings]()
FIXED_KEY = "_cgraph_fixed"


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_cmdline_main(config: pytest.Config) -> None:
    # Validated here, not in pytest_configure: pytest turns a UsageError from
    # this hook into one "ERROR: ..." line and exit code 4, but reports one
    # from pytest_configure as an internal error with a traceback.
    options = read_options(config)
    if options.enabled or options.check_known:
        _check_writable("--cgraph-repro-dir", options.repro_dir, is_dir=True)
        if options.report is not None:
            _check_writable("--cgraph-report", options.report, is_dir=False)
        if options.report_html is not None:
            _check_writable("--cgraph-report-html", options.report_html, is_dir=False)
    if options.enabled and options.database is not None:
        _check_database(options)
    # Also for marked tests and fixture checks alone, where the user named a
    # registry: a broken entry there would pass over a new bug as known.
    if options.enabled or options.check_known or options.known_dirs:
        _check_registries(options)
        # Last: the one check that may need torch (a backend a plugin
        # registered, a CUDA device), so a bad path is told without it.
        _check_backend_and_device(options)


def _check_backend_and_device(options: CgraphOptions) -> None:
    """Fail the session at start, in one line, rather than in every test.

    Without importing torch where the value alone tells (a built-in backend
    name, an Inductor mode, ``auto`` or ``cpu``): ``import torch._dynamo``
    costs seconds, more than the rest of a run that stops at a typo.
    """
    from pytest_cgraph.checking.backends import check_backend, check_device
    from pytest_cgraph.errors import ConfigurationError

    try:
        for backend in options.campaign_backends:
            check_backend(backend)
        check_device(options.device)
    except ConfigurationError as exc:
        raise pytest.UsageError(f"pytest-cgraph: {exc}") from None


def _check_registries(options: CgraphOptions) -> None:
    """Every file of the user's registries (``--cgraph-known`` dirs, the repro dir) is
    read once before anything runs, and one that is ours but not whole stops the run
    in one line: read as it is, it would pass over new bugs as known. The shipped
    baseline is checked by the suite, not at every start (it needs torch's version)."""
    from pytest_cgraph.errors import ConfigurationError
    from pytest_cgraph.registry.entries import Registry

    try:
        Registry.load([*options.known_dirs, options.repro_dir])
    except ConfigurationError as exc:
        raise pytest.UsageError(f"pytest-cgraph: {exc}") from None


def _check_database(options: CgraphOptions) -> None:
    """An unusable database (a file, no server) is found before the campaign runs."""
    from pytest_cgraph.errors import ConfigurationError
    from pytest_cgraph.hunting.database import check_usable

    assert options.database is not None
    try:
        check_usable(options.database)
    except ConfigurationError as exc:
        raise pytest.UsageError(f"--cgraph-database: {exc}") from None


def _check_writable(flag: str, path: Path, *, is_dir: bool) -> None:
    """A run must be able to save what it finds: try it before running anything."""
    from pytest_cgraph.checking.validation import probe_writable

    try:
        if not is_dir and path.is_dir():
            raise OSError(f"{path} is a directory")
        probe_writable(path if is_dir else path.parent)
    except OSError as error:
        reason = error.strerror or str(error)
        raise pytest.UsageError(
            f"{flag}: {str(path)!r} cannot be written ({reason}); give a writable "
            f"{'directory' if is_dir else 'path'}"
        ) from None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER_HELP)
    config.addinivalue_line("markers", "cgraph: an item of the pytest-cgraph fuzz campaign")
    options = read_options(config)
    worker_input = getattr(config, "workerinput", None)
    if worker_input is not None and "cgraph_database" in worker_input:
        # As the controller resolved it, whatever directory this worker runs in.
        options = dataclasses.replace(
            options, database=parse_database(worker_input["cgraph_database"], Path.cwd())
        )
    config.stash[OPTIONS_KEY] = options
    config.stash[STARTED_KEY] = time.perf_counter()
    if worker_input is None:
        config.pluginmanager.register(LiveReports(config), "cgraph-live-reports")
    if worker_input is not None and "cgraph_seed" in worker_input:
        config.stash[SEED_KEY] = worker_input["cgraph_seed"]
    else:
        # Chosen once, on the controller; xdist workers receive it.
        config.stash[SEED_KEY] = (
            options.seed if options.seed is not None else random.randrange(2**32)
        )
        if config.pluginmanager.hasplugin("xdist"):
            from pytest_cgraph.plugin.xdist import XdistHooks

            config.pluginmanager.register(
                XdistHooks(config, config.stash[SEED_KEY]), "cgraph-xdist"
            )


def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    options = config.stash[OPTIONS_KEY]
    if not options.enabled or hasattr(config, "workerinput"):
        return
    # The controller alone writes the repro dir and the report; a report
    # exists from the start, so a run killed at any moment leaves one.
    import torch

    from pytest_cgraph.plugin.live import LIVE_KEY, LiveRun

    live = LiveRun(
        repro_dir=options.repro_dir,
        report=options.report,
        run={
            # The names as given: one name for a run on one backend.
            "backend": ",".join(options.campaign_backends),
            "device": session_device(config),
            "iters": options.iters,
            "seed": config.stash[SEED_KEY],
            "torch": torch.__version__,
        },
        started=config.stash[STARTED_KEY],
    )
    config.stash[LIVE_KEY] = live
    live.write(force=True)


def session_device(config: pytest.Config) -> str:
    """The device the campaign checks on, as the controller names it."""
    from pytest_cgraph.checking.backends import resolve_device

    device = resolve_device(config.stash[OPTIONS_KEY].device)
    return str(device) if device is not None else "cpu"


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    options = config.stash[OPTIONS_KEY]
    if not options.enabled:
        return None
    from pytest_cgraph.checking.backends import resolve_device

    device = resolve_device(options.device)
    assert device is not None
    capture = (
        "capture=real (CUDA)"
        if device.type == "cuda"
        else "capture=skipped on cpu (torch's skip reasons are counted)"
    )
    seed = config.stash[SEED_KEY]
    budget = (
        f"duration={options.duration:g}s for the whole campaign"
        if options.duration is not None
        else f"examples={options.examples}"
    )
    if options.shards > 1:
        budget += f" in {options.shards} shards per family"
    lines = [
        f"cgraph: backend={','.join(options.campaign_backends)} device={device} "
        f"iters={options.iters} {budget} "
        f"{capture} seed={seed} (rerun with --cgraph-seed={seed})"
    ]
    if options.baseline:
        from importlib.metadata import version

        from pytest_cgraph.registry.entries import baseline_note

        note = baseline_note(version("torch"))
        if note is not None:
            lines.append(f"cgraph: {note}")
    return lines


#: Options only the campaign reads: giving one on the command line asks for it.
CAMPAIGN_FLAGS = ("--cgraph-examples", "--cgraph-duration", "--cgraph-families", "--cgraph-shards")


def wants_campaign(config: pytest.Config) -> bool:
    """Whether this ``--cgraph`` run includes the fuzz campaign.

    It does when no test path is named (``pytest --cgraph``), or when an
    option only the campaign reads is given; ``pytest --cgraph tests/mine``
    checks the marked tests under that path alone. xdist workers see the
    controller's command line, so they decide alike.
    """
    if config.args_source is not pytest.Config.ArgsSource.ARGS:
        return True
    words = [str(word) for word in config.invocation_params.args]
    return any(
        word == flag or word.startswith(f"{flag}=") for word in words for flag in CAMPAIGN_FLAGS
    )


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    # tryfirst: the campaign items must exist before -k and -m deselect.
    options = config.stash[OPTIONS_KEY]
    added: list[pytest.Item] = []
    if options.enabled and wants_campaign(config):
        from pytest_cgraph.plugin.campaign import make_items
        from pytest_cgraph.plugin.crashes import died_items

        worker = getattr(config, "workerinput", None)
        added += died_items(session, options)
        added += make_items(
            session,
            options,
            config.stash[SEED_KEY],
            workers=worker["workercount"] if worker is not None else 1,
        )
    if options.check_known:
        from pytest_cgraph.plugin.known_items import known_items

        added += known_items(session)
    if added:
        items.extend(added)
        # They were collected here, not from a file: say so, so that
        # "collected N items / M deselected" counts them.
        report = pytest.CollectReport("cgraph", "passed", None, list(added))
        config.hook.pytest_collectreport(report=report)


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
        or not cached_is_repro_file(file_path)
    ):
        return None
    return pytest.Module.from_parent(parent, path=file_path)


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
    settings = MarkerSettings.of(item)
    if settings is not None:
        item.stash[MARKED_KEY] = settings


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    settings = pyfuncitem.stash.get(MARKED_KEY, None)
    if settings is None:
        return None
    __tracebackhide__ = True
    stats = session.stats_of(pyfuncitem)
    started = time.perf_counter()
    try:
        run_marked(pyfuncitem, settings)
    finally:
        stats.seconds += time.perf_counter() - started
    return True


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when == "call" and report.passed and cached_is_repro_file(item.path):
        # A repro that passes no longer reproduces: its bug is fixed.
        report.__dict__[FIXED_KEY] = str(item.path)
    if report.when == "setup" and hasattr(item.config, "workerinput"):
        from pytest_cgraph.plugin.crashes import dead_programs_to_send

        dead = dead_programs_to_send(item.config)
        if dead:
            report.__dict__[DEAD_KEY] = dead
    if report.when == "call":
        stats = item.stash.get(session.STATS_KEY, None)
        if stats is not None:
            _hand_over(item, report, stats, call)
        # torch's own log records (compile traces, Dynamo's debug lines) are
        # the harness's business, not the reader's: the failure says what
        # matters, and the repro replays it.
        report.sections = [
            (title, content) for title, content in report.sections if "log" not in title
        ]
    return report


class LiveReports:
    """Controller side of pytest_cgraph.plugin.live: fold in what each report carries, first,
    so that reporters see the repro paths as written. Registered per session (a
    pytester run inside a run has its own), as the hook is given only a report."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        #: Snapshot reports the terminal reporter has kept since the last one.
        self._shown: list[pytest.TestReport] = []

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        from pytest_cgraph.plugin.live import LIVE_KEY

        live = self.config.stash.get(LIVE_KEY, None)
        if live is not None:
            with ending_the_run_on_mismatch():
                self._receive(live, report)

    def _receive(self, live: LiveRun, report: pytest.TestReport) -> None:
        from pytest_cgraph.plugin.live import show_status, worker_name

        worker = worker_name(report)
        snapshot = report.__dict__.pop(SNAPSHOT_KEY, None)
        if snapshot is not None:
            message = ItemMessage.unpack(snapshot)
            live.receive(report.nodeid, worker, message.stats, rss=message.rss_mb)
            self._forget_shown()
            self._shown.append(report)  # the terminal reporter keeps it after this hook
            show_status(self.config, live)
        from pytest_cgraph.plugin.crashes import receive_dead_programs

        dead = report.__dict__.pop(DEAD_KEY, None)
        if dead:
            receive_dead_programs(self.config, dead)
        data = report.__dict__.pop(REPORT_KEY, None)
        if data is None or report.when != "call":
            return
        final = ItemMessage.unpack(data)
        live.receive(report.nodeid, worker, final.stats, rss=final.rss_mb, final=True)
        if final.text is not None:
            # Rendered from the failures as written here, not as the worker meant them.
            report.longrepr = live.rendered(final.text)

    def _forget_shown(self) -> None:
        """Drop earlier snapshot reports from the terminal reporter's statistics: it keeps
        every report it sees, and a day-long run sends one per item every 10 s."""
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        kept = getattr(reporter, "stats", {}).get("")  # passed setups: no category
        if kept and self._shown:
            shown = {id(report) for report in self._shown}
            kept[:] = [report for report in kept if id(report) not in shown]
        self._shown.clear()


def _hand_over(
    item: pytest.Item, report: pytest.TestReport, stats: RunStats, call: pytest.CallInfo[None]
) -> None:
    """An item's final statistics, and its failure's text, to the run's one writer.

    In an xdist worker they travel packed with the report (pytest serialises
    ``report.__dict__``, as it does Hypothesis's statistics). In one process
    they go to the :class:`~pytest_cgraph.plugin.live.LiveRun` as objects,
    and the failure is rendered from them as stored, before any reporter
    reads it.
    """
    from pytest_cgraph.failures import FailureText
    from pytest_cgraph.plugin.live import LIVE_KEY, MAIN, rss_mb

    text = FailureText.carried_by(call.excinfo.value if call.excinfo else None)
    if hasattr(item.config, "workerinput"):
        report.__dict__[REPORT_KEY] = ItemMessage(stats, rss_mb(), text).pack()
        return
    live = item.config.stash.get(LIVE_KEY, None)
    if live is None:
        return
    live.receive(report.nodeid, MAIN, stats, rss=rss_mb(), final=True)
    if text is not None and report.failed:
        report.longrepr = live.rendered(text)


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    if hasattr(config, "workerinput"):
        if config.stash[OPTIONS_KEY].enabled:
            from pytest_cgraph.plugin.crashes import dead_programs_to_send

            # A worker that replaced a dead one and ran no item sends its
            # predecessor's program as it finishes.
            config.workeroutput[DEAD_KEY] = dead_programs_to_send(config)  # type: ignore[attr-defined]
        return
    from pytest_cgraph.plugin.live import LIVE_KEY

    live = config.stash.get(LIVE_KEY, None)
    if live is not None and live.dead_elsewhere and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


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
    from pytest_cgraph.plugin.live import LIVE_KEY

    live = config.stash[LIVE_KEY]
    total = live.total()
    wall = time.perf_counter() - config.stash[STARTED_KEY]
    from pytest_cgraph.strategies.ops import OPS

    terminalreporter.section("cgraph summary")
    seed = config.stash[SEED_KEY]
    device = session.device(config)
    terminalreporter.write_line(
        f"backend {','.join(options.campaign_backends)}, device {device}, "
        f"{iterations_words(total.iterations, options.iters)}, seed {seed}"
    )
    for line in summary_lines(total, wall, [op.name for op in OPS]):
        terminalreporter.write_line(line)
    if options.duration is not None:
        from pytest_cgraph.plugin.live import time_spread

        terminalreporter.write_line(time_spread(live, options.duration, wall))
    for text in live.dead_elsewhere:
        terminalreporter.write_line(f"a program killed the process that checked it:\n{text}")
    data = live.write(force=True, complete=True)
    assert data is not None  # a forced write always makes the data
    if options.report is not None:
        terminalreporter.write_line(f"JSON report: {options.report}")
    if options.report_html is not None:
        from pytest_cgraph.reporting.report import write_html

        # Repro paths are relative to where pytest was started.
        write_html(data, options.report_html, run_dir=config.invocation_params.dir)
        terminalreporter.write_line(f"HTML report: {options.report_html}")


__all__ = ["MARKER", "cgraph"]
