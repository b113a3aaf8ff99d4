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

from hypothesis.database import ExampleDatabase

from pytest_cgraph.hunting.forwarding import ForwardingDatabase


class KeepFailing(ForwardingDatabase):
    """Forwards everything to ``wrapped`` but a deletion made while ``last_failed`` is set.

    The hunt sets ``last_failed`` each time its test function runs, to
    whether that program differed from eager. Hypothesis deletes a replayed
    example right after running it, so the deletions that follow a failing
    run are the ones to drop. Any deletion clears the flag: an example that
    never reaches the test function (one an upgraded strategy can no longer
    draw) is deleted as Hypothesis decides, never kept on a stale flag.
    """

    def __init__(self, wrapped: ExampleDatabase) -> None:
        super().__init__(wrapped)
        self.last_failed = False

    def delete(self, key: bytes, value: bytes) -> None:
        still_failing, self.last_failed = self.last_failed, False
        if not still_failing:
            super().delete(key, value)

    # A move (a shrink moving a larger failure to the secondary corpus) is
    # always honoured: forwarded as it is.
