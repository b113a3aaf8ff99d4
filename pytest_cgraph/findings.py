"""The signatures a time-boxed campaign has found so far, shared by the processes of a machine.

A bug that several families reach is worth shrinking once: shrinking it
again costs up to ``--cgraph-shrink-seconds`` and a repro verification,
time a campaign of fixed wall time takes from new bugs. The items of one
process share a set in memory; xdist gives a running worker no way to
hear of another's findings, so the workers of one machine share a
directory too, which the controller makes and names in each worker's
``workerinput``: a file per signature, written when it is found and looked
up before a failure is shrunk. A worker on another host, where no such
directory exists, keeps its own set, as a single process does. Two
workers finding the same bug at the same moment both shrink it, and the
controller writes its repro once.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Iterator, MutableSet
from pathlib import Path


class FoundSignatures(MutableSet[str]):
    """A set of signatures; with a ``directory``, also those other processes added there."""

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
