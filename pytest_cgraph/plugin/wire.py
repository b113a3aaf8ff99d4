"""What an xdist worker sends its controller, as one versioned schema.

Workers may run another host's copy of pytest-cgraph; pytest-xdist carries
only plain data (a report's ``__dict__``, a worker's output). Everything the
plugin sends goes through here: an item's statistics (a running snapshot,
or its final figures with its failure's text) and the programs of
processes that died. In one process nothing is packed: the objects go to
the :class:`~pytest_cgraph.plugin.live.LiveRun` as they are.

A message of another schema is refused in one line that says what to do,
never read half-way.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest

from pytest_cgraph.errors import CgraphError
from pytest_cgraph.failures import FailureText
from pytest_cgraph.reporting.stats import RunStats

#: Raised whenever a message's fields change meaning or shape: the fields of every
#: record that crosses processes (whatever has a ``to_json``/``from_json`` or
#: ``pack``/``unpack`` pair, and the records and enums they hold).
#: ``tests/unit/test_wire_records.py`` records those fields beside the schema they
#: belong to, and fails when they change and this does not.
#: 2: a registry entry (``KnownBug``) carries what a machine ``requires`` to show it,
#: and run statistics (``RunStats``) count programs by their ``iterations``.
#: 3: a known bug seen again (``KnownAs``) carries its ``standing``: outside
#: torch.compile's contract, or fixed on a newer torch.
#: 4: a registry entry carries the ``backend`` it was recorded with: a backend of
#: one's own files its failures by face.
#: 5: a registry entry carries its program's ``calls`` where its ``ops`` are declared
#: narrower: what its bug is known to make.
SCHEMA = 5

#: Where each message rides: a key of a report's ``__dict__`` or of a worker's output.
#: An item's call report: its final :class:`ItemMessage`.
REPORT_KEY = "_cgraph_stats"
#: A passed setup report sent while an item runs: its :class:`ItemMessage` so far.
SNAPSHOT_KEY = "_cgraph_snapshot"
#: A setup report, or a worker's output as it ends: :class:`DeadProgramMessage` s.
DEAD_KEY = "_cgraph_dead"


class WireMismatch(CgraphError, RuntimeError):
    """A worker sent a message of another schema: another pytest-cgraph version."""


@dataclass(frozen=True)
class ItemMessage:
    """An item's statistics, its worker's memory, and (once it failed) its failure's text."""

    stats: RunStats
    rss_mb: float | None = None
    text: FailureText | None = None

    def pack(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "stats": self.stats.to_json(),
            "rss_mb": self.rss_mb,
            "text": self.text.to_json() if self.text is not None else None,
        }

    @classmethod
    def unpack(cls, data: dict[str, Any]) -> ItemMessage:
        _check_schema(data)
        text = data.get("text")
        return cls(
            RunStats.from_json(data["stats"]),
            data.get("rss_mb"),
            FailureText.from_json(text) if text is not None else None,
        )


@dataclass(frozen=True)
class DeadProgramMessage:
    """A program that killed the process checking it: its item and its failure's text."""

    nodeid: str
    text: FailureText

    def pack(self) -> dict[str, Any]:
        return {"schema": SCHEMA, "nodeid": self.nodeid, "text": self.text.to_json()}

    @classmethod
    def unpack(cls, data: dict[str, Any]) -> DeadProgramMessage:
        _check_schema(data)
        return cls(str(data["nodeid"]), FailureText.from_json(data["text"]))


def _check_schema(data: dict[str, Any]) -> None:
    schema = data.get("schema") if isinstance(data, dict) else None
    if schema != SCHEMA:
        raise WireMismatch(
            f"an xdist worker sent pytest-cgraph message schema {schema}, this controller "
            f"reads {SCHEMA}: install the same pytest-cgraph on every host of the run"
        )


@contextmanager
def ending_the_run_on_mismatch() -> Iterator[None]:
    """Receive messages; one of another schema ends the run with its one line (a usage
    error, as a wrong option would), never with a traceback from inside a hook."""
    try:
        yield
    except WireMismatch as error:
        pytest.exit(str(error), returncode=pytest.ExitCode.USAGE_ERROR)
