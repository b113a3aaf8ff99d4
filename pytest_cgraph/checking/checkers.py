"""Where a program is checked: here under a time limit, or in a child process that may die.

Both checkers turn whatever a program does (pass, differ, raise eagerly,
hang, kill its process) into an :class:`Outcome`; the campaign treats
them alike.

``InProcessChecker`` is the default: the soft time limit and the in-flight
record of :mod:`pytest_cgraph.checking.guard` contain what they can, and under
pytest-xdist the controller survives a worker's death.

``IsolatedChecker`` (``--cgraph-isolate``, and every time-boxed hunt) runs
the checks in a child. For a CPU program the child is forked from a
forkserver that has imported torch once, so a new child costs a fork, not
an ``import torch``. A CUDA program's child is spawned instead: importing
torch's compile stack asks CUDA for its device count, after which torch
refuses CUDA in any forked child ("Cannot re-initialize CUDA in forked
subprocess"; an H100 run lost every campaign program to it). The child checks
programs sent to it until one kills it (segfault, abort, ``os._exit``) or
outlives the time limit, when it is killed; either way the program becomes
a failure of this process (an invalid program, if eager's own side killed
it: its dump says which side died), and the next program gets a fresh child.
"""

from __future__ import annotations

import contextlib
import dataclasses
import faulthandler
import importlib
import multiprocessing
import os
import tempfile
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pytest_cgraph.checking.heap import freeze_for_life
from pytest_cgraph.failures import Case, Outcome, Verdict

if TYPE_CHECKING:
    from pytest_cgraph.checking.guard import InFlight

#: Imported by the forkserver once, before any child is forked from it.
#: What every check imports, loaded before the first check's time limit starts: a
#: limit that fires inside an import leaves torch half-imported (Inductor's
#: templates then register twice: "duplicate template name"), and every later
#: check of the process fails. The engine resets CUDA-graph trees before each
#: program, which imports Inductor's compile stack: a second or more on a busy
#: machine, past a 1 s limit.
_PRELOAD = ["torch", "torch._inductor.cudagraph_trees", "pytest_cgraph.checking.runner"]


def import_before_the_clock() -> None:
    """Import :data:`_PRELOAD` now (free once done), outside any time limit."""
    for module in _PRELOAD:
        importlib.import_module(module)


#: How long a new child may take to import torch and the compile stack (a
#: spawned one, on a busy machine) before it checks its first program.
CHILD_START_S = 600.0
#: What a child sends once it is ready to check.
READY = "ready"

#: Programs one child checks before it is replaced by a fresh one. torch
#: keeps ~0.1 MB of host memory per compile even after ``torch._dynamo.reset()``
#: (the class of pytorch/pytorch#174468); a fresh child returns it.
RECYCLE_PROGRAMS = 500


def check_case(case: Case) -> Outcome:
    """Check ``case`` here and now: every way the program can end, as an :class:`Outcome`.

    Only what the harness itself gets wrong escapes (as ``ERROR``): a hang
    is the caller's to contain.
    """
    from pytest_cgraph.checking.runner import check_source
    from pytest_cgraph.errors import EquivalenceError, InvalidProgram
    from pytest_cgraph.oracle.engine import intra_op_threads

    try:
        with intra_op_threads(case.threads):
            report = check_source(
                case.source, backend=case.backend, device=case.device, iters=case.iters
            )
    except InvalidProgram as invalid:
        return Outcome(Verdict.INVALID, reason=invalid.reason)
    except EquivalenceError as error:
        return Outcome(Verdict.FAIL, error.difference)
    return Outcome(Verdict.PASS, report=report)


def start_method(device: str) -> Literal["spawn", "forkserver"]:
    """How a child for a program on ``device`` is started: forked, unless CUDA is in play.

    A fork is cheap (torch is already imported in the forkserver), but a
    forked child cannot initialise CUDA once its parent has asked CUDA
    anything, and the forkserver's imports do: a CUDA program's child is
    spawned and imports torch itself.
    """
    return "spawn" if device.startswith("cuda") else "forkserver"


def with_own_threads(case: Case) -> Case:
    """``case``, checked with this process's intra-op thread count unless it names one.

    A child starts with torch's default pool (one thread per core), while an
    xdist worker shares the cores out (:func:`pytest_cgraph.plugin.session.share_cores`)
    and replays, shrinks and locates what the child found in its own process:
    a program that fails only with several threads failed in the child and
    passed its replay ("not reproducible"). The child runs as its parent does.
    """
    if case.threads is not None:
        return case
    import torch

    return dataclasses.replace(case, threads=torch.get_num_threads())


class Checker(Protocol):
    """What the campaign checks programs with: either checker below."""

    def check(self, case: Case) -> Outcome:
        """Check ``case``; every way the program can end is an :class:`Outcome`."""
        ...

    def close(self) -> None:
        """Release what checking needed (an in-flight record, a child process)."""
        ...


class InProcessChecker:
    """Checks in this process: soft time limit, in-flight record, hard limit."""

    def __init__(self, inflight: InFlight | None, timeout: float | None) -> None:
        self.inflight = inflight
        self.timeout = timeout

    def check(self, case: Case) -> Outcome:
        """Check ``case``; a hang becomes a ``TIMEOUT`` outcome."""
        from pytest_cgraph.checking.guard import ProgramTimeout, time_limit

        import_before_the_clock()
        if self.inflight is not None:
            self.inflight.start(case)
        try:
            with time_limit(self.timeout):
                return check_case(case)
        except ProgramTimeout:
            return Outcome.timed_out(self.timeout)
        finally:
            if self.inflight is not None:
                self.inflight.finish()

    def close(self) -> None:
        """The item is done: its in-flight record goes."""
        if self.inflight is not None:
            self.inflight.close()


class IsolatedChecker:
    """A child process that checks program sources, replaced when it dies."""

    def __init__(self, setup_modules: tuple[str, ...], timeout: float | None) -> None:
        self.setup_modules = setup_modules
        self.timeout = timeout
        self._process: Any = None
        self._start_method: str | None = None
        self._connection: Connection | None = None
        self.children_started = 0
        self._checked_by_child = 0
        # Where the child's faulthandler writes as it dies: the dump names
        # the frame it died in, and so which crash it is (failures.crash_site).
        self._dump_path: str | None = None

    def check(self, case: Case) -> Outcome:
        """Check ``case`` in the child; never raises for what the program does."""
        if self._checked_by_child >= RECYCLE_PROGRAMS:
            self._end_child()
        method = start_method(case.device)
        if self._start_method not in (None, method):
            self._end_child()  # a CPU child cannot check a CUDA program, nor the reverse
        connection = self._child(method)
        self._checked_by_child += 1
        connection.send(with_own_threads(case))
        if not connection.poll(self.timeout or None):
            self._kill()
            return Outcome.timed_out(self.timeout)
        try:
            outcome: Outcome = connection.recv()
        except (EOFError, ConnectionError):
            exitcode = self._death()
            return Outcome.exited(exitcode, self._last_words())
        return outcome

    def start(self, device: str) -> None:
        """Start a child for programs on ``device`` now, if none runs, rather than at
        the first check: a time-boxed campaign item takes its share of the box
        once the child is up, so that the child's start is not its alone."""
        method = start_method(device)
        if self._start_method not in (None, method):
            self._end_child()
        self._child(method)

    def close(self) -> None:
        """End the child and remove its dump file (a later check starts both afresh)."""
        try:
            self._end_child()
        finally:
            if self._dump_path is not None:
                with contextlib.suppress(OSError):
                    os.unlink(self._dump_path)
                self._dump_path = None

    def _end_child(self) -> None:
        if self._connection is not None:
            self._connection.close()  # the child's loop ends at EOF
            self._connection = None
        if self._process is not None:
            self._process.join(timeout=10)
        self._kill()

    def _last_words(self) -> str:
        """What the dead child's faulthandler wrote (empty if it died without a word)."""
        if self._dump_path is None:
            return ""
        try:
            with open(self._dump_path, errors="replace") as stream:
                return stream.read()
        except OSError:
            return ""

    def _child(self, method: str) -> Connection:
        if self._process is not None and self._process.is_alive():
            assert self._connection is not None
            return self._connection
        context: Any = multiprocessing.get_context(method)
        if method == "forkserver":
            context.set_forkserver_preload([*_PRELOAD, *self.setup_modules])
        self._start_method = method
        pipe: tuple[Connection, Connection] = context.Pipe()
        parent, child = pipe
        if self._dump_path is None:
            handle, self._dump_path = tempfile.mkstemp(prefix="cgraph-child-", suffix=".dump")
            os.close(handle)
        open(self._dump_path, "w").close()  # emptied: a new child, a new dump
        self._process = context.Process(
            target=_serve,
            args=(child, self.setup_modules, self._dump_path),
            daemon=True,
            name="cgraph-isolated",
        )
        self._process.start()
        child.close()
        self._connection = parent
        # The child says when it has imported torch and the compile stack: a
        # spawned one imports them itself, and no program's time limit counts that.
        with contextlib.suppress(EOFError, OSError):
            if parent.poll(CHILD_START_S):
                parent.recv()
        self.children_started += 1
        self._checked_by_child = 0
        return parent

    @property
    def child_pid(self) -> int | None:
        """The current child's process id (for memory readings), if one runs."""
        return self._process.pid if self._process is not None else None

    def _death(self) -> int | None:
        """The dead child's exit code (``None`` if it has not exited after all)."""
        self._process.join(timeout=10)
        self._connection = None
        exitcode: int | None = self._process.exitcode
        return exitcode

    def _kill(self) -> None:
        if self._process is not None and self._process.is_alive():
            self._process.kill()
            self._process.join(timeout=10)
        self._process = None
        self._connection = None


def _serve(connection: Connection, setup_modules: tuple[str, ...], dump_path: str) -> None:
    """The child's loop: check each case received, send back the outcome.

    A fatal signal makes faulthandler write the dying thread's stack to
    ``dump_path``, which the parent reads to tell one crash from another.
    """
    faulthandler.enable(open(dump_path, "w"), all_threads=False)  # noqa: SIM115 (for its life)
    for module in setup_modules:
        # One that cannot be imported is reported by the first check (below),
        # as the harness's error; it must not end the child unexplained.
        with contextlib.suppress(Exception):
            importlib.import_module(module)
    import_before_the_clock()  # done already in a forked child; a spawned one imports here
    freeze_for_life()
    connection.send(READY)
    while True:
        try:
            case = connection.recv()
        except EOFError:
            return
        try:
            for module in case.setup_modules:  # a shared child: each case registers its backend
                importlib.import_module(module)
            outcome = check_case(case)
        except Exception as error:  # the harness itself: reported, not a program failure
            outcome = Outcome(Verdict.ERROR, reason=f"{type(error).__name__}: {error}")
        connection.send(outcome)
