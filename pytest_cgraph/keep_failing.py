"""An example database that keeps a saved failure for as long as its program still fails.

Hypothesis replays a test's saved examples first and deletes each one that
no longer fails. To a hunt, a program can fail and still pass the test:
its failure is a known bug (a registry has it) or one this hunt already
found and recorded, so the hunt passes over it. Hypothesis would delete it
then: the hunt's own next round would erase the failure it just saved, and
any run that knows a bug would erase it for every machine sharing the
database. A known bug is not a fixed one; only a program that now passes
should leave the database, so this wrapper drops exactly the deletions
that follow a replay whose program still differs from eager.

Imports Hypothesis: import it only where the hunt runs.
"""

from __future__ import annotations

from collections.abc import Iterable

from hypothesis.database import ExampleDatabase


class KeepFailing(ExampleDatabase):
    """Forwards everything to ``wrapped`` but a deletion made while ``last_failed`` is set.

    The hunt sets ``last_failed`` each time its test function runs, to
    whether that program differed from eager. Hypothesis deletes a replayed
    example right after running it, so the deletions that follow a failing
    run are the ones to drop. Any deletion clears the flag: an example that
    never reaches the test function (one an upgraded strategy can no longer
    draw) is deleted as Hypothesis decides, never kept on a stale flag.
    """

    def __init__(self, wrapped: ExampleDatabase) -> None:
        super().__init__()
        self.wrapped = wrapped
        self.last_failed = False

    def __repr__(self) -> str:
        return f"KeepFailing({self.wrapped!r})"

    def fetch(self, key: bytes) -> Iterable[bytes]:
        return self.wrapped.fetch(key)

    def save(self, key: bytes, value: bytes) -> None:
        self.wrapped.save(key, value)

    def delete(self, key: bytes, value: bytes) -> None:
        still_failing, self.last_failed = self.last_failed, False
        if not still_failing:
            self.wrapped.delete(key, value)

    def move(self, src: bytes, dest: bytes, value: bytes) -> None:
        # A shrink moving a larger failure to the secondary corpus: always honoured.
        self.wrapped.move(src, dest, value)

    def _start_listening(self) -> None:
        self.wrapped.add_listener(self._broadcast_change)

    def _stop_listening(self) -> None:
        self.wrapped.remove_listener(self._broadcast_change)
