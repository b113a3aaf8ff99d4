"""The database wrapper that keeps a replayed failure saved while its program still fails."""

from __future__ import annotations

from hypothesis.database import InMemoryExampleDatabase

from pytest_cgraph.hunting.keep_failing import KeepFailing


def test_keep_failing_drops_only_the_deletion_after_a_failing_run() -> None:
    inner = InMemoryExampleDatabase()
    kept = KeepFailing(inner)
    for value in (b"a", b"b", b"c"):
        kept.save(b"key", value)
    kept.last_failed = True  # the replay of b"a" still differed from eager
    kept.delete(b"key", b"a")
    kept.delete(b"key.secondary", b"a")  # the flag is spent: a plain deletion
    kept.delete(b"key", b"b")  # no run in between: never kept on a stale flag
    kept.move(b"key", b"key.secondary", b"c")
    assert set(kept.fetch(b"key")) == {b"a"}
    assert set(kept.fetch(b"key.secondary")) == {b"c"}
    assert kept.last_failed is False
