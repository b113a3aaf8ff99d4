"""Draws that depend on the seed alone, whatever process makes them.

Imports Hypothesis when used, not at import.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def without_local_constants() -> Iterator[None]:
    """Draw without the constants Hypothesis mines from "local" modules.

    Hypothesis sometimes draws a number found in the source of the modules
    loaded from outside site-packages. Which those are depends on the
    process: an editable install, a plugin, the pytest that xdist copies
    into a remote worker's directory, or a test module. A campaign's
    programs must depend on its seed alone, on every worker and host, so
    its rounds see no such constants, nor do scripted draws
    (``draw_programs``) and the shrink-quality tests, which measure what a
    campaign draws. (Hypothesis's own global constants are still drawn.)
    """
    try:
        from hypothesis.internal.conjecture import providers

        # Hypothesis internals, read by attribute: another Hypothesis may lack them.
        sorted_set: Any = getattr(providers, "SortedSet")  # noqa: B009
        float_to_int: Any = getattr(providers, "float_to_int")  # noqa: B009

        original = providers._get_local_constants
        empty = providers._local_constants.__class__(
            integers=sorted_set(),
            floats=sorted_set(key=float_to_int),
            bytes=sorted_set(),
            strings=sorted_set(),
        )
    except (ImportError, AttributeError, TypeError):  # another Hypothesis: draw as it does
        yield
        return
    providers.CONSTANTS_CACHE.cache.clear()
    providers._get_local_constants = lambda: empty
    try:
        yield
    finally:
        providers._get_local_constants = original
        providers.CONSTANTS_CACHE.cache.clear()
