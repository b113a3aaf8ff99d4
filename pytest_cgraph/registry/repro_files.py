"""The files of a repro dir on disk: the header they open with, and how one is written.

Two kinds of file, both marked as this plugin's by their first line: a
*repro file* (``.py``, a standalone script) and an *entry* (``.toml``, the
same header and program as data). Their header lines are the format the
registry reads and the repro writer writes, so they are defined here, once,
below both.

A file is written atomically (a temporary file renamed into place) under a
lock, so xdist workers that find the same bug at once never interleave, and
a file once written is only ever replaced by a smaller program of the same
signature, never by a larger one, never when it is not this plugin's.

Torch-free and project-free: imported while collecting, by the registry.
"""

from __future__ import annotations

import enum
import glob
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path

#: First line of every repro file: how the plugin recognises its own files.
MARKER_LINE = "# pytest-cgraph repro"
#: First line of every entry: a repro file's header and program, no oracle.
ENTRY_LINE = "# pytest-cgraph entry"

#: Header lines a registry is read from.
BASE_SIGNATURE = "# base signature: "
LAYER = "# layer: "
#: The failure's headline (:meth:`Difference.headline`): a crash's exception and message.
FAILURE = "# failure: "
SIZE = "# size: "
#: What a machine needs to show the failure (:mod:`pytest_cgraph.registry.requirements`),
#: space-separated; absent: nothing beyond the device.
REQUIRES = "# requires: "

#: A repro file's suffix: a Python script.
REPRO_SUFFIX = ".py"
#: An entry's suffix: a TOML data file.
ENTRY_SUFFIX = ".toml"

#: Kept beside the repro files while one is written: serialises writers.
LOCK_NAME = ".cgraph-repro.lock"

#: How far into a file its header may reach.
HEADER_BYTES = 4000


def is_own_text(text: str) -> bool:
    """Whether ``text`` starts as a repro file or an entry does."""
    return text.startswith((MARKER_LINE, ENTRY_LINE))


def is_entry(text: str) -> bool:
    """Whether ``text`` is an entry (replayed by the installed oracle), not a repro file."""
    return text.startswith(ENTRY_LINE)


def header_value(text: str, prefix: str) -> str | None:
    """The value of the header line starting with ``prefix``, if any."""
    match = re.search(rf"^{re.escape(prefix)}(\S.*)$", text[:HEADER_BYTES], re.MULTILINE)
    return match.group(1).strip() if match else None


class Kinship(enum.Enum):
    """How a file already in the repro dir stands to the repro being written."""

    #: Another bug (another mechanism of the signature): kept, and the new
    #: repro goes beside it.
    OTHER = "other"
    #: The same bug: the smaller of the two stays.
    SAME = "same"
    #: The same bug, and the file claims more programs than the new repro
    #: would (its program makes fewer calls): it stays whatever the sizes.
    BROADER = "broader"


def write_repro(
    directory: Path,
    name: str,
    text: str,
    size: int,
    suffix: str = REPRO_SUFFIX,
    kinship: Callable[[Path], Kinship] = lambda path: Kinship.SAME,
) -> tuple[Path, bool]:
    """Write ``<directory>/<name><suffix>`` (a repro file's ``.py``, an entry's ``.toml``)
    atomically unless a smaller repro of the same bug is there (or one of equal size
    whose text sorts first: the kept file is the same whatever order the candidates
    come in).

    One name is one signature, which several mechanisms may share (told
    apart by their programs' calls): ``kinship(path)`` says how each file of
    the name (``<name><suffix>``, ``<name>-2<suffix>``, ...) stands to this
    repro. The first file of the same bug is the one to replace or keep;
    with none, this repro goes to the first free name.

    Returns the file's path and whether it was written (``False``: the
    file of the same bug already there was kept).

    A lock file serialises xdist workers that find the same bug at once.
    """
    from filelock import FileLock

    directory.mkdir(parents=True, exist_ok=True)
    with FileLock(directory / LOCK_NAME):
        target = None
        for candidate in _files_named(directory, name, suffix):
            existing = candidate.read_text(errors="replace")
            old_size = header_value(existing, SIZE) if is_own_text(existing) else None
            if old_size is None or not old_size.isdigit():
                continue  # not ours, or ours but unreadable: never overwritten
            relation = kinship(candidate)
            if relation is Kinship.OTHER:
                continue
            # Equal drawn sizes: the smaller text stays, so that which of
            # two equally small repros is kept does not depend on which
            # worker's arrived first. An entry, or a program of no drawn
            # size (recorded by hand), is never replaced by an equal one.
            tie_break = size > 0 and suffix == REPRO_SUFFIX
            if (
                relation is Kinship.BROADER
                or int(old_size) < size
                or (int(old_size) == size and (not tie_break or existing <= text))
            ):
                return candidate, False
            target = candidate
            break
        if target is None:
            target = directory / f"{name}{suffix}"
            number = 2
            while target.exists():
                target = directory / f"{name}-{number}{suffix}"
                number += 1
        handle, temporary = tempfile.mkstemp(dir=directory, prefix=f".{name}.", suffix=".tmp")
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.chmod(temporary, 0o666 & ~_umask())  # mkstemp makes it private; a repro is shared
        os.replace(temporary, target)
    return target, True


def _files_named(directory: Path, name: str, suffix: str) -> list[Path]:
    """``<name><suffix>`` and its numbered siblings (``<name>-2<suffix>``, ...), in order."""
    numbered = re.compile(re.escape(name) + r"(?:-(\d+))?" + re.escape(suffix))
    found = []
    for path in directory.glob(f"{glob.escape(name)}*{suffix}"):
        match = numbered.fullmatch(path.name)
        if match:
            found.append((int(match.group(1) or 1), path))
    return [path for _, path in sorted(found)]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
