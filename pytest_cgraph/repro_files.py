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
SIZE = "# size: "

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


def write_repro(
    directory: Path,
    name: str,
    text: str,
    size: int,
    suffix: str = REPRO_SUFFIX,
    same_bug: Callable[[Path], bool] = lambda path: True,
) -> tuple[Path, bool]:
    """Write ``<directory>/<name><suffix>`` (a repro file's ``.py``, an entry's ``.toml``)
    atomically unless a smaller repro of the same bug is there (or one of equal size
    whose text sorts first: the kept file is the same whatever order the candidates
    come in).

    ``same_bug(path)`` says whether the file of that name already there is
    this bug: one name is one signature, which several mechanisms may share
    (told apart by their programs' calls). A file of another bug is kept,
    and this one goes beside it (``<name>-2<suffix>``, ...).

    Returns the file's path and whether it was written (``False``: the
    smaller one already there was kept).

    A lock file serialises xdist workers that find the same bug at once.
    """
    from filelock import FileLock

    directory.mkdir(parents=True, exist_ok=True)
    with FileLock(directory / LOCK_NAME):
        target = directory / f"{name}{suffix}"
        number = 2
        while target.exists():
            existing = target.read_text(errors="replace")
            old_size = header_value(existing, SIZE) if is_own_text(existing) else None
            if old_size is not None and old_size.isdigit() and same_bug(target):
                # Equal drawn sizes: the smaller text stays, so that which of
                # two equally small repros is kept does not depend on which
                # worker's arrived first. An entry, or a program of no drawn
                # size (recorded by hand), is never replaced by an equal one.
                tie_break = size > 0 and suffix == REPRO_SUFFIX
                if int(old_size) < size or (
                    int(old_size) == size and (not tie_break or existing <= text)
                ):
                    return target, False
                break
            # Not ours, ours but unreadable (no size), or another bug's:
            # never overwritten; ours goes beside it.
            target = directory / f"{name}-{number}{suffix}"
            number += 1
        handle, temporary = tempfile.mkstemp(dir=directory, prefix=f".{name}.", suffix=".tmp")
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.chmod(temporary, 0o666 & ~_umask())  # mkstemp makes it private; a repro is shared
        os.replace(temporary, target)
    return target, True


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
