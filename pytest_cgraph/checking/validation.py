"""Checks of user-given values, one place for all: one wording, one legal form each.

Raises :class:`~pytest_cgraph.errors.ConfigurationError` with a message
that says what is wrong and the legal form; callers add where the value
came from (an option, an ini key, a marker). Torch-free: options are
checked for every pytest run.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pytest_cgraph.oracle.errors import ConfigurationError

#: The device forms accepted everywhere a device is given.
DEVICE_FORMS = "auto, cpu, cuda or cuda:N"

_DEVICE = re.compile(r"auto|cpu|cuda(:\d+)?")
_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(s|m|h)?")
_UNIT_SECONDS = {"s": 1.0, "m": 60.0, "h": 3600.0}
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"", "0", "false", "no", "off"})


def positive_int(value: Any, what: str) -> int:
    """A whole number of 1 or more (``"5"`` from an option is accepted)."""
    if isinstance(value, bool):
        raise ConfigurationError(f"{what} must be a positive integer, got {value!r}")
    try:
        number = int(value) if isinstance(value, (int, str)) else None
    except ValueError:
        number = None
    if number is None:
        raise ConfigurationError(f"{what} must be a positive integer, got {value!r}")
    if number < 1:
        raise ConfigurationError(f"{what} must be a positive integer, got {value!r}")
    return number


def non_negative_number(value: Any, what: str) -> float:
    """A finite number of 0 or more (a tolerance, a time limit)."""
    if isinstance(value, bool):
        raise ConfigurationError(f"{what} must be a non-negative number, got {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ConfigurationError(f"{what} must be a non-negative number, got {value!r}") from None
    if not math.isfinite(number) or number < 0:
        raise ConfigurationError(f"{what} must be a non-negative number, got {value!r}")
    return number


def duration(value: str, what: str) -> float:
    """Seconds from ``90s``, ``30m``, ``8h`` or a plain number of seconds."""
    match = _DURATION.fullmatch(value.strip())
    if not match or float(match.group(1)) <= 0:
        raise ConfigurationError(f"{what} must be like 90s, 30m or 8h, got {value!r}")
    return float(match.group(1)) * _UNIT_SECONDS[match.group(2) or "s"]


def device_spec(value: Any) -> str:
    """A device as the user writes it: ``auto``, ``cpu``, ``cuda`` or ``cuda:N``."""
    text = str(value).strip()
    if not _DEVICE.fullmatch(text):
        raise ConfigurationError(f"unknown device {text!r}; use {DEVICE_FORMS}")
    return text


def flag(value: Any, what: str) -> bool:
    """On or off, as environment variables spell it: ``1``/``0``, ``true``/``false``,
    ``yes``/``no``, ``on``/``off`` (any case); empty is off."""
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ConfigurationError(f"{what} must be 1 or 0 (true/false, yes/no, on/off), got {value!r}")


def known_dirs(given: Iterable[Any]) -> tuple[Path, ...]:
    """Registry directories of known bugs; blank entries are skipped.

    Each must exist: a typo would silently count nothing as known.
    """
    directories = tuple(Path(str(entry).strip()) for entry in given if str(entry).strip())
    for directory in directories:
        if not directory.is_dir():
            raise ConfigurationError(f"{str(directory)!r} is not a directory of repro files")
    return directories


def probe_writable(directory: Path) -> None:
    """Make ``directory`` if need be and write a file into it, then remove both.

    Raises ``OSError`` when it cannot be written. What the probe made is
    removed again, so a run that finds nothing leaves nothing behind.
    """
    import os
    import tempfile

    made = []
    probe = directory
    while not probe.exists():
        made.append(probe)
        probe = probe.parent
    try:
        directory.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=directory, prefix=".cgraph-probe-")
        os.close(handle)
        os.unlink(temporary)
    finally:
        for created in made:
            try:
                created.rmdir()
            except OSError:
                break
