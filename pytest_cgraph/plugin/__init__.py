"""The pytest adapter: hooks, options, items, the marker, the fixture, and scale-out.

``hooks`` is the ``pytest11`` entry point, imported by every pytest run, so
it imports no torch. The items adapt the stages below to pytest: ``campaign``
(a hunt per family), ``marker`` (a user's test as the program), ``fixture``,
``known_items`` (``--cgraph-check-known``). Scale-out: ``xdist`` (hooks
registered under pytest-xdist), ``live`` (the controller's running total and
the one writer of repro files and reports) and ``crashes`` (programs that
took their process down). ``options`` and ``session`` hold what a pytest
session gives them.
"""
