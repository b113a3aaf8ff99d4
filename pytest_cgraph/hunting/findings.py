"""The bugs a time-boxed campaign has found so far, shared by the processes of a machine.

A bug that several families reach is worth shrinking once: shrinking it
again costs up to ``--cgraph-shrink-seconds`` and a repro verification,
time a campaign of fixed wall time takes from new bugs. The items of one
process share a set in memory; xdist gives a running worker no way to
hear of another's findings, so the workers of one machine share a
directory too, which the controller makes and names in each worker's
``workerinput``: a file per bug (its found key), written when it is found and looked
up before a failure is shrunk. A worker on another host, where no such
directory exists, keeps its own set, as a single process does. Two
workers finding the same bug at the same moment both shrink it, and the
controller writes its repro once.

What the set holds for a bug is its signature and the hazard classes of
its minimal program's calls (:func:`found_key`), so a run tells its own
findings apart as a later run tells its repro files apart
(:meth:`pytest_cgraph.registry.entries.KnownBug.claims`): a wrong value after a
random draw and one after a lost write are two bugs of one signature, and
the first met again through other random ops is the same bug.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Iterator, MutableSet
from pathlib import Path

from pytest_cgraph.registry.hazards import hazards, required_hazards

#: Between a found key's signature and its hazard classes (no signature holds one).
_SEPARATOR = "\t"


def found_key(signature: str, calls: Iterable[str]) -> str:
    """What the found set holds for a new bug: its signature, and what a program must
    make to be it, by the registry's rule for a run's repro files: the hazard
    classes of its minimal program's calls, or (a program of no hazard) its calls."""
    calls = frozenset(calls)
    if hazards(calls):
        return f"{signature}{_SEPARATOR}h:{','.join(sorted(required_hazards(calls)))}"
    return f"{signature}{_SEPARATOR}c:{','.join(sorted(calls))}"


def found_claims(found: Iterable[str], signature: str, calls: Iterable[str]) -> bool:
    """Whether a bug already found (a key of ``found``) is the one a program making
    ``calls`` fails with, by ``signature``: every hazard class (or, for a bug of no
    hazard, every call) the found bug's key names is the program's too."""
    calls = frozenset(calls)
    have = hazards(calls)
    for key in found:
        found_signature, _, wanted = key.partition(_SEPARATOR)
        if found_signature != signature:
            continue
        kind, _, names = wanted.partition(":")
        needed = set(filter(None, names.split(",")))
        if needed <= (have if kind == "h" else calls):
            return True
    return False


def found_signature(found: Iterable[str], signature: str) -> bool:
    """Whether any bug of ``signature`` was found (whatever its calls)."""
    return any(key.partition(_SEPARATOR)[0] == signature for key in found)


class FoundSignatures(MutableSet[str]):
    """A set of found keys (:func:`found_key`; any strings); with a ``directory``, also
    those other processes added there."""

    def __init__(self, directory: Path | None = None, found: Iterable[str] = ()) -> None:
        self.directory = directory
        self._known_here = set(found)

    def _file(self, signature: str) -> Path:
        assert self.directory is not None
        return self.directory / hashlib.sha1(signature.encode()).hexdigest()

    def __contains__(self, signature: object) -> bool:
        if signature in self._known_here:
            return True
        if self.directory is None or not isinstance(signature, str):
            return False
        if self._file(signature).exists():
            self._known_here.add(signature)
            return True
        return False

    def add(self, signature: str) -> None:
        self._known_here.add(signature)
        if self.directory is None:
            return
        try:
            # Written whole under a name of its own, then renamed: a reader
            # never sees half a signature.
            part = self.directory / f".{os.getpid()}.part"
            part.write_text(signature)
            part.replace(self._file(signature))
        except OSError:
            return  # the directory is gone: the run is ending, this process still knows

    def discard(self, signature: str) -> None:
        self._known_here.discard(signature)

    def _everything(self) -> set[str]:
        found = set(self._known_here)
        if self.directory is not None and self.directory.is_dir():
            for path in self.directory.iterdir():
                if not path.name.startswith("."):
                    try:
                        found.add(path.read_text())
                    except OSError:
                        continue
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self._everything())

    def __len__(self) -> int:
        return len(self._everything())

    def __repr__(self) -> str:
        return f"FoundSignatures({self.directory}, {sorted(self._known_here)})"
