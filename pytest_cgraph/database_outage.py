"""A shared example database that may go away mid-run: the run goes on without it.

A Redis server shared by workers and machines is an aid to a campaign, not
a part of its verdicts: what a hunt finds is judged, shrunk and written to
its repro file whatever the database does. So when the server stops
answering (restarted, out of memory, the network gone), the hunt must not
fail its item on the next save. This wrapper turns the first error into
one warning that names the server and what went wrong, and from then on
reads nothing and writes nothing there: retrying would cost a socket
timeout per program.

Imports Hypothesis: import it only where the database is built.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterable

from hypothesis.database import ExampleDatabase


class DatabaseLost(UserWarning):
    """The shared example database stopped answering; the run went on without it."""


class OutageTolerant(ExampleDatabase):
    """Forwards to ``wrapped`` until it raises one of ``errors``; then does nothing.

    ``address`` names the server in the warning (``host:port``: its URL may
    carry a password).
    """

    def __init__(
        self, wrapped: ExampleDatabase, address: str, errors: tuple[type[BaseException], ...]
    ) -> None:
        super().__init__()
        self.wrapped = wrapped
        self.address = address
        self.errors = errors
        self.lost = False

    def __repr__(self) -> str:
        return f"OutageTolerant({self.wrapped!r})"

    def _give_up(self, error: BaseException) -> None:
        self.lost = True
        with contextlib.suppress(*self.errors):  # no change of a lost server will come
            self.wrapped.remove_listener(self._broadcast_change)
        reason = " ".join(str(error).split()) or type(error).__name__
        # Shown, never raised: under -W error a warning raised from a save
        # would fail the item this wrapper is here to keep running.
        with warnings.catch_warnings():
            warnings.simplefilter("always", DatabaseLost)
            warnings.warn(
                DatabaseLost(
                    f"pytest-cgraph: the example database at {self.address} stopped answering "
                    f"({type(error).__name__}: {reason}); this run goes on without it "
                    "(failures it finds still get their repro files)"
                ),
                stacklevel=3,
            )

    def fetch(self, key: bytes) -> Iterable[bytes]:
        if self.lost:
            return []
        try:
            return list(self.wrapped.fetch(key))  # a lazy fetch would fail later, unguarded
        except self.errors as error:
            self._give_up(error)
            return []

    def save(self, key: bytes, value: bytes) -> None:
        if not self.lost:
            try:
                self.wrapped.save(key, value)
            except self.errors as error:
                self._give_up(error)

    def delete(self, key: bytes, value: bytes) -> None:
        if not self.lost:
            try:
                self.wrapped.delete(key, value)
            except self.errors as error:
                self._give_up(error)

    def move(self, src: bytes, dest: bytes, value: bytes) -> None:
        if not self.lost:
            try:
                self.wrapped.move(src, dest, value)
            except self.errors as error:
                self._give_up(error)

    def _start_listening(self) -> None:
        if not self.lost:
            try:
                self.wrapped.add_listener(self._broadcast_change)
            except self.errors as error:
                self._give_up(error)

    def _stop_listening(self) -> None:
        with contextlib.suppress(*self.errors):  # lost already, or going: nothing to stop
            self.wrapped.remove_listener(self._broadcast_change)
