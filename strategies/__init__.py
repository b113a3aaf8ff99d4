"""Hypothesis strategies that draw small tensor programs (``pytest_cgraph.strategies``).

Installed under the plugin's namespace from the repository's ``strategies/``
folder. This package never imports the runner or the plugin: programs flow
from here to them as rendered source, not back. Names are loaded on first
use, so ``pytest_cgraph.strategies.families`` stays importable without torch.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "FAMILIES",
    "OPS",
    "SCHEDULES",
    "InputSpec",
    "OpSpec",
    "Program",
    "Statement",
    "draw_programs",
    "programs",
]

_HOMES = {
    "FAMILIES": "families",
    "OPS": "ops",
    "OpSpec": "ops",
    "SCHEDULES": "program",
    "InputSpec": "program",
    "Program": "program",
    "Statement": "program",
    "programs": "generate",
    "draw_programs": "generate",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'pytest_cgraph.strategies' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
