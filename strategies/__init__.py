"""Hypothesis strategies that draw small tensor programs (``pytest_cgraph.strategies``).

Installed under the plugin's namespace from the repository's ``strategies/``
folder. This package never imports the runner or the plugin: programs flow
from here to them as rendered source, not back.
"""

from pytest_cgraph.strategies.generate import programs
from pytest_cgraph.strategies.ops import FAMILIES, OPS, OpSpec
from pytest_cgraph.strategies.program import SCHEDULES, InputSpec, Program, Statement

__all__ = [
    "FAMILIES",
    "OPS",
    "SCHEDULES",
    "InputSpec",
    "OpSpec",
    "Program",
    "Statement",
    "programs",
]
