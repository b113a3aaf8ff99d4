"""What a pytest session holds for pytest-cgraph, in one place.

Each resource is made on first use (most runs never need one) and its
cleanup is registered with the session where it is made.
"""

from __future__ import annotations

import importlib.util
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_cgraph.plugin.options import OPTIONS_KEY, worker_device
from pytest_cgraph.registry.entries import KnownBug, Registry, baseline_dir
from pytest_cgraph.reporting.stats import RunStats

if TYPE_CHECKING:
    from pytest_cgraph.checking.checkers import IsolatedChecker
    from pytest_cgraph.failures import Case
    from pytest_cgraph.hunting.findings import FoundSignatures
    from pytest_cgraph.oracle.difference import Difference
    from pytest_cgraph.registry.judge import Judge

#: An item's statistics, carried to the controller in its report.
STATS_KEY = pytest.StashKey[RunStats]()

_ISOLATED_KEY = pytest.StashKey["IsolatedChecker"]()
_REGISTRY_KEY = pytest.StashKey[Registry]()
_DEVICE_KEY = pytest.StashKey[str]()
_MODULES_KEY = pytest.StashKey[tuple[str, ...]]()
_DEADLINE_KEY = pytest.StashKey[float]()


def stats_of(item: pytest.Item) -> RunStats:
    """The item's statistics, made on first use."""
    return item.stash.setdefault(STATS_KEY, RunStats())


def device(config: pytest.Config) -> str:
    """The device this process checks on (imports torch; call only at run time)."""
    if _DEVICE_KEY not in config.stash:
        spec = config.stash[OPTIONS_KEY].device
        if spec not in ("auto", "cuda"):
            config.stash[_DEVICE_KEY] = spec
        else:
            import torch

            worker_input = getattr(config, "workerinput", None)
            worker = int(str(worker_input["workerid"]).lstrip("gw")) if worker_input else None
            config.stash[_DEVICE_KEY] = worker_device(spec, worker, torch.cuda.device_count())
    return config.stash[_DEVICE_KEY]


def plugin_modules(config: pytest.Config) -> tuple[str, ...]:
    """Modules loaded with ``-p``: a backend they register must be registered in a repro too.

    Only names importable as modules (``-p pytester`` names pytest's own
    ``_pytest.pytester``, which a repro must not import).
    """
    if _MODULES_KEY not in config.stash:
        found = []
        for name in getattr(config.option, "plugins", None) or []:
            if name.startswith("no:"):
                continue
            try:
                if importlib.util.find_spec(name) is not None:
                    found.append(name)
            except (ImportError, ValueError):
                continue
        config.stash[_MODULES_KEY] = tuple(found)
    return config.stash[_MODULES_KEY]


_FOUND_KEY = pytest.StashKey["FoundSignatures"]()
_FOUND_DIR_KEY = pytest.StashKey[str]()

#: The ``workerinput`` key of the directory the workers of a machine share findings in.
FOUND_INPUT = "cgraph_found_dir"


def found_in_run(config: pytest.Config) -> FoundSignatures:
    """Signatures this run's time-boxed campaign items found so far.

    Shared by the items a process runs, and by the xdist workers of the
    controller's machine (see :mod:`pytest_cgraph.hunting.findings`), so that a bug
    several families reach is shrunk and reported by the first only. A
    campaign of a number of examples does not share it: its items find the
    same whatever the workers.
    """
    if _FOUND_KEY not in config.stash:
        from pytest_cgraph.hunting.findings import FoundSignatures

        shared = getattr(config, "workerinput", {}).get(FOUND_INPUT)
        directory = Path(shared) if shared and Path(shared).is_dir() else None
        config.stash[_FOUND_KEY] = FoundSignatures(directory)
    return config.stash[_FOUND_KEY]


def found_directory(config: pytest.Config) -> str | None:
    """On the controller: the directory its workers share findings in (made on first use).

    Only a time-boxed campaign shares findings; removed when the session ends.
    """
    options = config.stash[OPTIONS_KEY]
    if options.duration is None:
        return None
    if _FOUND_DIR_KEY not in config.stash:
        import shutil
        import tempfile

        directory = tempfile.mkdtemp(prefix="cgraph-found-")
        config.stash[_FOUND_DIR_KEY] = directory
        config.add_cleanup(lambda: shutil.rmtree(directory, ignore_errors=True))
    return config.stash[_FOUND_DIR_KEY]


def registry(config: pytest.Config) -> Registry:
    """The session's known bugs: the shipped baseline, ``--cgraph-known`` dirs, the repro dir.

    Read once per process, at the first item that needs it.
    """
    if _REGISTRY_KEY not in config.stash:
        registry = Registry.load(registry_dirs(config))
        sent = getattr(config, "workerinput", {}).get(KNOWN_INPUT, [])
        if sent:  # the controller's own registries, which a worker on another host cannot read
            registry = registry.joined(KnownBug.from_json(entry) for entry in sent)
        config.stash[_REGISTRY_KEY] = registry
    return config.stash[_REGISTRY_KEY]


_JUDGE_KEY = pytest.StashKey["Judge"]()


def judge(config: pytest.Config) -> Judge:
    """The session's one judge of checked programs: the session's registries, the run's
    options; campaign items add the run's own findings to theirs."""
    if _JUDGE_KEY not in config.stash:
        from pytest_cgraph.recording.repro import first_diverging_layer, masked_rungs
        from pytest_cgraph.registry.judge import Judge

        config.stash[_JUDGE_KEY] = Judge(
            registry(config),
            first_diverging_layer,
            config.stash[OPTIONS_KEY].strict,
            masked_at=masked_rungs,
        )
    return config.stash[_JUDGE_KEY]


def known_torch_bug(config: pytest.Config, case: Case, difference: Difference) -> KnownBug | None:
    """The known torch bug (a form of a bugs file's bug) that ``difference`` met by
    ``case`` is, by the session's one judge; ``None`` for one not on file."""
    from pytest_cgraph.failures import Outcome, Verdict

    known = judge(config)(case, Outcome(Verdict.FAIL, difference)).known
    return known if known is not None and known.bug is not None else None


#: The ``workerinput`` key of the entries the controller sends (:func:`shared_entries`).
KNOWN_INPUT = "cgraph_known"


def shared_entries(config: pytest.Config) -> list[dict[str, Any]]:
    """On the controller: the entries of ``--cgraph-known`` dirs and the repro dir, as
    builtins for a worker's ``workerinput``.

    A worker reads the baseline of its own torch, but the other registries are
    files on the controller's host: a worker in a directory (or on a host) of
    its own would count an earlier run's findings as new again.
    """
    options = config.stash[OPTIONS_KEY]
    directories = [Path(directory).resolve() for directory in options.known_dirs]
    local = Registry.load([*directories, Path(options.repro_dir).resolve()])
    return [entry.to_json() for entry in local.entries()]


def registry_dirs(config: pytest.Config) -> list[Path]:
    """The directories of the session's registries, baseline first."""
    options = config.stash[OPTIONS_KEY]
    directories: list[Path] = []
    if options.baseline:
        import torch

        baseline = baseline_dir(torch.__version__)
        if baseline is not None:
            directories.append(baseline)
    return [*directories, *options.known_dirs, options.repro_dir]


def isolated_checker(config: pytest.Config) -> IsolatedChecker:
    """The session's child process for ``--cgraph-isolate``, shared by its items."""
    if _ISOLATED_KEY not in config.stash:
        from pytest_cgraph.checking.checkers import IsolatedChecker

        options = config.stash[OPTIONS_KEY]
        checker = IsolatedChecker(plugin_modules(config), options.timeout)
        config.stash[_ISOLATED_KEY] = checker
        config.add_cleanup(checker.close)
    return config.stash[_ISOLATED_KEY]


def isolated_child_pid(config: pytest.Config) -> int | None:
    """The process id of the session's isolated checking child, if one runs now."""
    checker = config.stash.get(_ISOLATED_KEY, None)
    return checker.child_pid if checker is not None else None


_THREADS_KEY = pytest.StashKey[bool]()


def share_cores(config: pytest.Config) -> None:
    """In an xdist worker, let torch use only this worker's share of the cores.

    torch sizes its intra-op pool to every core of the machine, so N
    workers on N cores run N times as many threads as cores; their busy
    waiting cost a 2-worker campaign here a third of its speed. The
    programs are tiny: one thread each loses nothing. Once per process.
    """
    worker = getattr(config, "workerinput", None)
    if worker is None or _THREADS_KEY in config.stash:
        return
    config.stash[_THREADS_KEY] = True
    import os

    import torch

    workers = int(worker.get("workercount", 1) or 1)
    share = max(1, (os.cpu_count() or 1) // workers)
    if torch.get_num_threads() > share:
        torch.set_num_threads(share)


def output_guard(config: pytest.Config) -> AbstractContextManager[Any]:
    """Output capture suspended, so that a line written inside reaches the terminal."""
    capture = config.pluginmanager.get_plugin("capturemanager")
    return capture.global_and_fixture_disabled() if capture is not None else nullcontext()


def campaign_deadline(config: pytest.Config) -> float:
    """When this process's share of a time-boxed campaign ends (``time.time()``).

    The box starts as the process's first campaign item does, so start-up
    (importing torch, collecting, an xdist worker coming up) is not taken
    from it; every worker starts its items within seconds of the others,
    so the whole campaign ends one box after its items began.
    """
    import time

    if _DEADLINE_KEY not in config.stash:
        duration = config.stash[OPTIONS_KEY].duration
        assert duration is not None, "only a time-boxed campaign has a deadline"
        config.stash[_DEADLINE_KEY] = time.time() + duration
    return config.stash[_DEADLINE_KEY]
