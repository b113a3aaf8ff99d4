"""Keep Python's cycle collector off the long-lived heap while programs are checked.

A process that checks programs holds a large heap that lives as long as
it does: torch's modules and operator tables, Hypothesis, pytest, the
registry of known bugs. Dynamo collects the young generations after every
compile, so objects age fast, and every few programs a full collection
walks that whole heap again: about a tenth of a campaign item's time on
these machines (2.2 s of 23 s over 185 programs), for objects that
never become garbage.

``gc.freeze`` moves every object alive now out of the collector's sight;
collections then walk only what the checks themselves create, and any
cycle those leave behind is collected as before. Unfreezing when the block
ends hands the frozen objects back, so anything of them that has died
meanwhile is still collected later: nothing is kept for good.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def long_lived_heap_frozen() -> Iterator[None]:
    """Freeze the objects alive now for the duration of the block.

    Reentrant in effect: an inner block's unfreeze hands back the outer
    block's objects too, which costs the outer block speed, never memory.
    """
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def freeze_for_life() -> None:
    """Freeze what a freshly started checking process inherited, for its whole life.

    For a child that is replaced after a bounded number of programs: what
    it inherited (torch, the harness) outlives it anyway.
    """
    gc.freeze()
