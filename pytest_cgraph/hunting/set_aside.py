"""Failures met while shrinking another one: set aside, then shrunk in a round of their own.

While Hypothesis shrinks a failure, some of the smaller programs it tries
fail in another way. Left to itself (one bug reported per run), Hypothesis
takes any smaller failing program as the new best and "slips" to that bug:
the bug first found is never reported. A round of the hunt therefore shrinks
only the first new bug it meets; a program that fails in another new way
is set aside, as the choices Hypothesis made to draw it, and a later round
starts from exactly that program (:class:`StartFrom`), so it is shrunk too.

Imports Hypothesis: import it only where the hunt runs.
"""

from __future__ import annotations

from collections.abc import Iterable

from hypothesis.database import ExampleDatabase

from pytest_cgraph.hunting.forwarding import ForwardingDatabase


def current_choices() -> bytes | None:
    """The choices that drew the program now under test, serialised; ``None`` if unknown.

    Read from Hypothesis's build context: inside a test function of
    ``@given`` every choice of the drawn arguments has been made. Another
    Hypothesis that keeps them elsewhere gives ``None``, and the failure is
    then only counted, as before.
    """
    try:
        from hypothesis.control import current_build_context
        from hypothesis.database import choices_to_bytes

        return choices_to_bytes(current_build_context().data.choices)
    except (ImportError, AttributeError, TypeError):
        return None


class StartFrom(ForwardingDatabase):
    """A database that holds one program: a round replays it first, and shrinks it.

    Hypothesis replays a test's saved programs before it generates, and
    shrinks one that fails. The program is in the secondary corpus (the
    programs a failure was shrunk from): a failure replayed exactly from
    the primary corpus counts as already shrunk, and Hypothesis would
    report it as it is. Nothing else is fetched, so nothing the hunt saved
    earlier is replayed (a check, or a fresh process for a crash, each).
    What Hypothesis saves or deletes goes on to ``wrapped`` (if any), so
    the shrunk failure is kept for the next run as any other.
    """

    def __init__(self, choices: bytes, wrapped: ExampleDatabase | None) -> None:
        super().__init__(wrapped)
        self.choices = choices

    def fetch(self, key: bytes) -> Iterable[bytes]:
        return [self.choices] if key.endswith(b".secondary") else []

    # No listening: nothing this database holds changes.
    def _start_listening(self) -> None:
        pass

    def _stop_listening(self) -> None:
        pass
