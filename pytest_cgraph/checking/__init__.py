"""Checking a program: the public check, the backends and devices users name, and containment.

Around the oracle (:mod:`pytest_cgraph.oracle`), which judges one program:
``runner`` validates what a user gave and calls it (``check_equivalent``,
``check_source``); ``backends`` and ``validation`` turn names into what the
oracle runs; ``checkers``, ``guard`` and ``heap`` check a program here under a
time limit or in a child process that may die, and keep the long-lived heap
out of the collector's way. Nothing here knows of pytest items or campaigns.
"""
