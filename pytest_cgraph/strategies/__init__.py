"""Hypothesis strategies that draw small tensor programs (``pytest_cgraph.strategies``).

This package never imports the runner or the plugin: programs flow
from here to them as rendered source, not back. Names are loaded on first
use, so ``pytest_cgraph.strategies.families`` stays importable without torch.
"""

from __future__ import annotations

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "families": ["FAMILIES"],
        "ops": ["OPS", "OpSpec"],
        "program": ["SCHEDULES", "InputSpec", "Program", "Statement"],
        "generate": ["programs", "draw_programs"],
    },
)
