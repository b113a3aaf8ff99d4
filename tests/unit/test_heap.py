"""The long-lived heap is hidden from the cycle collector while programs are checked, only then."""

from __future__ import annotations

import gc
import weakref

from pytest_cgraph.checking.heap import long_lived_heap_frozen


class Node:
    """An object that can sit in a reference cycle and be watched through a weak reference."""

    def __init__(self) -> None:
        self.other: Node | None = None


def cycle() -> weakref.ref[Node]:
    """Two nodes that only each other keep alive, once the caller drops them."""
    first, second = Node(), Node()
    first.other, second.other = second, first
    return weakref.ref(first)


def test_objects_alive_before_are_frozen_and_handed_back() -> None:
    gc.collect()
    assert gc.get_freeze_count() == 0
    with long_lived_heap_frozen():
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0


def test_cycles_made_inside_are_collected_inside() -> None:
    with long_lived_heap_frozen():
        made_inside = cycle()
        gc.collect()
        assert made_inside() is None


def test_a_frozen_cycle_that_dies_inside_is_collected_after() -> None:
    holder = [Node()]
    holder[0].other = Node()
    holder[0].other.other = holder[0]
    watched = weakref.ref(holder[0])
    with long_lived_heap_frozen():
        holder.clear()  # the cycle is garbage now, but frozen: out of the collector's sight
        gc.collect()
        assert watched() is not None
    gc.collect()
    assert watched() is None
