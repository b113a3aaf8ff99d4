"""Containment of programs that hang or kill the process checking them.

Three layers, cheapest first:

- a **soft time limit** (``SIGALRM``) raises :class:`ProgramTimeout` inside a
  program that runs too long, whether in Python or in C code that returns
  to the interpreter: the check ends as a ``timeout`` failure, shrunk and
  saved like any other;
- an **in-flight record**: before each program, the process writes it to
  ``<repro-dir>/.cgraph-inflight/<item>.json``. If the process dies
  (segfault, abort, ``os._exit``), whoever notices (the xdist controller,
  or the next run) still has the program: nothing found is lost;
- a **hard time limit**: faulthandler's watchdog thread, which needs no GIL,
  writes every thread's stack beside the record and ends the process when
  the soft limit could not interrupt it (C code that never returns).
"""

from __future__ import annotations

import faulthandler
import json
import os
import re
import signal
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from pytest_cgraph.failures import Case, Failure, death, hang

INFLIGHT_DIR = ".cgraph-inflight"

#: Seconds the hard limit waits beyond the soft one before ending the process.
HARD_LIMIT_GRACE = 10.0

#: After the soft limit fires, it fires again this often until the block ends.
REPEAT_SECONDS = 1.0

#: The name a record takes once a process has claimed it to report it.
_CLAIMED = re.compile(r"\.claimed-(?:(?P<host>\w+)-)?(?P<pid>\d+)\.json$")

#: This host, as records name it: a pid means nothing on another host, so a
#: record (or claim) is judged alive or dead only by a process of its own host
#: (workers on several hosts may share one directory over a network filesystem).
HOST = re.sub(r"\W", "_", socket.gethostname()) or "localhost"

#: First line faulthandler writes when its watchdog fires.
_WATCHDOG_HEADER = re.compile(r"^Timeout \(\d+:\d\d:\d\d\)!", re.MULTILINE)


class ProgramTimeout(BaseException):
    """A program ran past its time limit.

    A ``BaseException``, like ``KeyboardInterrupt``: torch's ``except
    Exception`` blocks must not swallow it on its way out of the program.
    """

    def __init__(self, seconds: float) -> None:
        super().__init__(f"the program ran longer than the {seconds:g} s time limit")
        self.seconds = seconds


@contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Raise :class:`ProgramTimeout` in the block once it has run ``seconds``.

    Only in the main thread (signals are delivered there); elsewhere, and
    with ``seconds`` of ``None`` or 0, the block runs unlimited. An outer
    limit is restored afterwards.
    """
    if not seconds or threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: Any) -> None:
        raise ProgramTimeout(seconds)

    previous = signal.signal(signal.SIGALRM, interrupt)
    # Repeats each second after the limit: code that swallows the first
    # interruption (a compiler's broad ``except BaseException``) gets another.
    outer_delay, outer_interval = signal.setitimer(
        signal.ITIMER_REAL, seconds, min(seconds, REPEAT_SECONDS)
    )
    started = time.monotonic()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer_delay:
            remaining = outer_delay - (time.monotonic() - started)
            signal.setitimer(signal.ITIMER_REAL, max(remaining, 0.001), outer_interval)


def inflight_path(repro_dir: Path, nodeid: str) -> Path:
    """The record of the program ``nodeid`` is checking (one item runs in one process)."""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", nodeid).strip("_") or "item"
    return repro_dir / INFLIGHT_DIR / f"{name}.json"


class InFlight:
    """The in-flight record and hard limit of one item's checks in this process."""

    def __init__(self, repro_dir: Path, nodeid: str) -> None:
        self.path = inflight_path(repro_dir, nodeid)
        self.stacks_path = self.path.with_suffix(".stacks")
        self._stacks: IO[str] | None = None
        self._made_repro_dir = not repro_dir.exists()

    def start(self, case: Case, pid: int | None = None) -> None:
        """Record ``case`` (atomically) and arm the hard limit before running it.

        ``pid`` is the process checking it: this one, unless the check runs
        in a child that the record must name.
        """
        for attempt in range(3):
            # Another process may remove the (empty) directory between the
            # two calls, at the end of its item: make it again and retry.
            self.path.parent.mkdir(parents=True, exist_ok=True)
            try:
                handle, temporary = tempfile.mkstemp(dir=self.path.parent, suffix=".tmp")
                break
            except FileNotFoundError:
                if attempt == 2:
                    raise
        with os.fdopen(handle, "w") as stream:
            record = {"case": case.to_json(), "pid": pid or os.getpid(), "host": HOST}
            json.dump(record, stream)
        os.replace(temporary, self.path)
        if case.timeout:
            if self._stacks is None:
                self._stacks = open(self.stacks_path, "w")  # noqa: SIM115 (held for the watchdog)
            faulthandler.dump_traceback_later(
                case.timeout + HARD_LIMIT_GRACE, exit=True, file=self._stacks
            )

    def finish(self) -> None:
        """The program came back: disarm the hard limit (the record is kept until close)."""
        faulthandler.cancel_dump_traceback_later()

    def close(self) -> None:
        """The item is done: nothing is in flight any more."""
        faulthandler.cancel_dump_traceback_later()
        if self._stacks is not None:
            self._stacks.close()
            self._stacks = None
        remove_record(self.path, with_repro_dir=self._made_repro_dir)


def remove_record(record: Path, with_repro_dir: bool = False) -> None:
    """Remove an in-flight record, its stacks, and its directory once no other record is in it
    (and the repro dir too, ``with_repro_dir``, when the record made it): a run leaves no
    empty directory behind."""
    for path in (record, record.with_suffix(".stacks")):
        path.unlink(missing_ok=True)
    made = [record.parent] + ([record.parent.parent] if with_repro_dir else [])
    for directory in made:
        try:
            directory.rmdir()
        except OSError:
            break  # not empty (or already gone): leave it


@dataclass(frozen=True)
class DeadProgram:
    """A program whose process died while checking it, and what is known of how."""

    case: Case
    pid: int
    timed_out: bool
    stacks: str
    record: Path
    host: str = HOST

    def failure(self, cause: str) -> Failure:
        """The program as a failure: a hang if the watchdog ended it, else a death;
        ``cause`` says who saw the process end."""
        if self.timed_out:
            detail = f"it ran past the hard limit and {cause} ended it"
            return Failure(self.case, hang(self.case.timeout, detail))
        return Failure(self.case, death(cause))

    def forget(self) -> None:
        """Remove the record once it has been reported."""
        remove_record(self.record)


def read_dead_program(record: Path) -> DeadProgram | None:
    """The in-flight program of a process that died, or ``None`` if there is none to read."""
    try:
        data = json.loads(record.read_text())
        case, pid = Case.from_json(data["case"]), int(data["pid"])
        host = str(data.get("host", HOST))  # a record of an older version: this host's
    except (OSError, ValueError, TypeError, KeyError):
        return None
    try:
        stacks = record.with_suffix(".stacks").read_text(errors="replace")
    except OSError:
        stacks = ""
    timed_out = bool(_WATCHDOG_HEADER.search(stacks))
    return DeadProgram(case, pid, timed_out, stacks, record, host)


def stale_records(repro_dir: Path) -> list[Path]:
    """In-flight records left by processes that are gone (a run that died)."""
    directory = repro_dir / INFLIGHT_DIR
    if not directory.is_dir():
        return []
    stale = []
    for record in sorted(directory.glob("*.json")):
        claimer = _CLAIMED.search(record.name)
        if claimer is not None and _alive(int(claimer["pid"]), claimer["host"] or HOST):
            continue  # being reported by the live process that claimed it
        dead = read_dead_program(record)
        if dead is None or not _alive(dead.pid, dead.host):
            stale.append(record)
    return stale


def claim_stale_records(repro_dir: Path) -> list[DeadProgram]:
    """Take the records of processes that are gone, so that no other process takes them too.

    Each is renamed (atomically) to a name only this process uses before
    it is read: of several xdist workers sharing a directory, exactly one
    reports each dead program. The caller reports it, then forgets it.
    """
    claimed = []
    for record in stale_records(repro_dir):
        mine = record.with_name(f"{record.stem}.claimed-{HOST}-{os.getpid()}.json")
        try:
            os.replace(record, mine)
        except OSError:
            continue  # another process took it first
        stacks = record.with_suffix(".stacks")
        if stacks.exists():
            with suppress(OSError):
                os.replace(stacks, mine.with_suffix(".stacks"))
        dead = read_dead_program(mine)
        if dead is None:
            remove_record(mine)
            continue
        claimed.append(dead)
    return claimed


def _alive(pid: int, host: str = HOST) -> bool:
    """Whether process ``pid`` of ``host`` runs; one of another host counts as alive
    (it cannot be told from here, and its own host's processes will judge it)."""
    if host != HOST:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A dead xdist worker stays a zombie until its parent, the controller,
    # reaps it: it answers the signal test but runs no more.
    try:
        with open(f"/proc/{pid}/stat") as stat:
            state = stat.read().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return True
    return state != "Z"
