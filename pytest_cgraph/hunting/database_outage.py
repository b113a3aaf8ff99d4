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
from collections.abc import Callable, Iterable
from typing import TypeVar

from hypothesis.database import ExampleDatabase

from pytest_cgraph.hunting.forwarding import ForwardingDatabase

Result = TypeVar("Result")


class DatabaseLost(UserWarning):
    """The shared example database stopped answering; the run went on without it."""


class OutageTolerant(ForwardingDatabase):
    """Forwards to ``wrapped`` until it raises one of ``errors``; then does nothing.

    ``address`` names the server in the warning (``host:port``: its URL may
    carry a password).
    """

    def __init__(
        self, wrapped: ExampleDatabase, address: str, errors: tuple[type[BaseException], ...]
    ) -> None:
        super().__init__(wrapped)
        self.address = address
        self.errors = errors
        self.lost = False

    def _guarded(self, call: Callable[[], Result], lost: Result) -> Result:
        """``call()``, or ``lost`` once the server is gone (the first error gives it up)."""
        if self.lost:
            return lost
        try:
            return call()
        except self.errors as error:
            self._give_up(error)
            return lost

    def _give_up(self, error: BaseException) -> None:
        self.lost = True
        with contextlib.suppress(*self.errors):  # no change of a lost server will come
            super()._stop_listening()
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
        # Listed now: a lazy fetch would fail later, unguarded.
        return self._guarded(lambda: list(super(OutageTolerant, self).fetch(key)), [])

    def save(self, key: bytes, value: bytes) -> None:
        self._guarded(lambda: super(OutageTolerant, self).save(key, value), None)

    def delete(self, key: bytes, value: bytes) -> None:
        self._guarded(lambda: super(OutageTolerant, self).delete(key, value), None)

    def move(self, src: bytes, dest: bytes, value: bytes) -> None:
        self._guarded(lambda: super(OutageTolerant, self).move(src, dest, value), None)

    def _start_listening(self) -> None:
        self._guarded(super()._start_listening, None)

    def _stop_listening(self) -> None:
        with contextlib.suppress(*self.errors):  # lost already, or going: nothing to stop
            super()._stop_listening()
