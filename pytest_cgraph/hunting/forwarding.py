"""The one example-database wrapper: every call forwarded, a subclass changes what it must.

A hunt stacks databases on Hypothesis's own: one that keeps a failure while
its program still fails (:mod:`.keep_failing`), one that starts a round
from a program set aside (:mod:`.set_aside`), one that outlives a shared
server going away (:mod:`.database_outage`). Each differs from plain
forwarding in one or two calls; this base forwards the rest, listeners
included, so that a call Hypothesis adds is handled in one place.

Imports Hypothesis: import it only where the hunt runs.
"""

from __future__ import annotations

from collections.abc import Iterable

from hypothesis.database import ExampleDatabase


class ForwardingDatabase(ExampleDatabase):
    """Forwards every call to ``wrapped``; with none, it holds nothing and keeps nothing."""

    def __init__(self, wrapped: ExampleDatabase | None) -> None:
        super().__init__()
        self.wrapped = wrapped

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.wrapped!r})"

    def fetch(self, key: bytes) -> Iterable[bytes]:
        return self.wrapped.fetch(key) if self.wrapped is not None else []

    def save(self, key: bytes, value: bytes) -> None:
        if self.wrapped is not None:
            self.wrapped.save(key, value)

    def delete(self, key: bytes, value: bytes) -> None:
        if self.wrapped is not None:
            self.wrapped.delete(key, value)

    def move(self, src: bytes, dest: bytes, value: bytes) -> None:
        if self.wrapped is not None:
            self.wrapped.move(src, dest, value)

    def _start_listening(self) -> None:
        if self.wrapped is not None:
            self.wrapped.add_listener(self._broadcast_change)

    def _stop_listening(self) -> None:
        if self.wrapped is not None:
            self.wrapped.remove_listener(self._broadcast_change)
