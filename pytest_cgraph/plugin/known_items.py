"""``--cgraph-check-known``: one item per registry repro, failing once its bug is fixed.

The registries (the shipped baseline for the running torch, every
``--cgraph-known`` dir, the repro dir) are what a campaign passes over as
known. When torch fixes one of those bugs, its entry would hide nothing but
mislead everyone: this check names it (``FIXED: ... retire it``) so the
registry is kept true. An entry whose program now fails with another
signature is named too (``CHANGED: ...``): it would pass over programs of a
bug it no longer shows, and the bug it shows is not the one it names.
An entry that needs what this machine lacks (a CPU feature, a GPU:
:mod:`pytest_cgraph.registry.requirements`) is skipped with the reason,
never called fixed: torch did not change, only the machine.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_cgraph.errors import CgraphError
from pytest_cgraph.plugin import session
from pytest_cgraph.plugin.items import CgraphItem
from pytest_cgraph.registry.entries import KnownBug, Registry


class KnownBugFixed(CgraphError, AssertionError):
    """A registry repro no longer reproduces its bug (or now fails another way)."""


#: Replays of an entry whose process died before it counts as changed or fixed.
DEAD_PROCESS_TRIES = 3


class KnownBugItem(CgraphItem):
    """``cgraph::known::<file>``: does the registry entry still reproduce?"""

    reported_as_text = (KnownBugFixed,)

    def __init__(self, *, entry: KnownBug, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.entry = entry
        self.add_marker("cgraph")

    def runtest(self) -> None:
        from pytest_cgraph.oracle.driver import ReplayVerdict
        from pytest_cgraph.recording.repro import replay_verdict
        from pytest_cgraph.registry.requirements import unmet

        lacking = unmet(self.entry.requires)
        if lacking is not None:
            pytest.skip(f"{self.entry.path.name} {lacking}")
        replayed = replay_verdict(self.entry.path)
        if self.entry.signature.startswith("crash-process"):
            # A dead process is memory corruption: what it overwrites, and so how the
            # process ends (a signal, or a MemoryError first), varies from run to run.
            # Shown once in DEAD_PROCESS_TRIES replays, the bug is still there.
            for _ in range(DEAD_PROCESS_TRIES - 1):
                if replayed.verdict is ReplayVerdict.REPRODUCED:
                    break
                replayed = replay_verdict(self.entry.path)
        if replayed.verdict is ReplayVerdict.REPRODUCED_DIFFERENTLY:
            raise KnownBugFixed(
                f"CHANGED: {self.entry.path} now fails another way ({replayed.line}); "
                "it no longer shows the bug it names: re-record it "
                "(python -m pytest_cgraph.record --refresh DIR) or retire it"
            )
        if replayed.verdict is not ReplayVerdict.REPRODUCED:
            raise KnownBugFixed(
                f"FIXED: {self.entry.path} no longer reproduces ({replayed.line}); retire it "
                "from the registry"
            )

    def description(self) -> str:
        return f"known bug: {self.entry.path.name}"


def known_items(session_: pytest.Session) -> list[KnownBugItem]:
    """One item per registry entry, in the registries' order (one per file)."""
    seen: set[Path] = set()
    items = []
    # The registries this process reads, not the entries a controller sent a
    # worker (its files may be on another host): every worker collects the same.
    registry = Registry.load(session.registry_dirs(session_.config))
    for entry in registry.entries():
        if entry.path in seen:
            continue
        seen.add(entry.path)
        items.append(
            KnownBugItem.from_parent(
                session_,
                name=f"known::{entry.path.parent.name}/{entry.path.stem}",
                nodeid=f"cgraph::known::{entry.path.parent.name}/{entry.path.stem}",
                entry=entry,
            )
        )
    return items
