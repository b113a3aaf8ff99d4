"""The oracle: run a program eagerly and compiled, side by side, and judge every iteration.

Everything in this package imports torch and the standard library only,
never the rest of pytest-cgraph, pytest or Hypothesis: its modules are
pasted verbatim into every repro file (see :mod:`pytest_cgraph.recording.repro`), so
a repro runs exactly the code the campaign ran, with torch alone. The
modules are listed in dependency order in ``MODULES``; a repro holds them
in that order with their imports of each other removed, so their top-level
names must be distinct across modules (a test checks it).
"""

#: The oracle's modules, each after the ones it imports.
MODULES = (
    "errors",
    "protocol",
    "difference",
    "compare",
    "cloning",
    "graphs",
    "sides",
    "observe",
    "compiling",
    "rounding",
    "engine",
    "ladder",
    "driver",
)
